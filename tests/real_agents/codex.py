"""Pointing the real Codex CLI at the scripted model server, in an isolated home.

Codex reads ``$CODEX_HOME/config.toml``: a ``model_providers`` entry whose ``base_url`` is the
server's ``/v1`` and whose ``wire_api`` is ``responses`` makes it ``POST /v1/responses`` there,
with the key from the variable ``env_key`` names (any value will do). ``HOME`` and the XDG
folders are fresh too, so the person's own configuration is never read or written. Analytics
are off; with no login Codex calls nothing else. ``CODEX_HOME`` is made outside the temporary
directory (:func:`codex_home` says why).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import urlsplit

from pipeline.core.config import PRESETS
from tests.model_server import (
    ApiError,
    Exchange,
    ModelReply,
    ModelRequest,
    ModelServer,
    Script,
    Shell,
    Usage,
    WriteFile,
)
from tests.real_agents.repo import git, path_with

API_KEY_VARIABLE = "SCRIPTED_MODEL_API_KEY"
"""The variable the provider's ``env_key`` names: a dummy key."""


def codex_config(server_url: str, model: str = "scripted") -> str:
    """``config.toml`` for a Codex that speaks to the server at ``server_url``.

    One retry of a failed request or stream (instead of 4 and 5), so an error the script
    answers on purpose ends the invocation in seconds.
    """
    return (
        f'model = "{model}"\n'
        'model_provider = "scripted"\n\n'
        "[model_providers.scripted]\n"
        'name = "ralph scripted model"\n'
        f'base_url = "{server_url}/v1"\n'
        'wire_api = "responses"\n'
        f'env_key = "{API_KEY_VARIABLE}"\n'
        "request_max_retries = 1\n"
        "stream_max_retries = 1\n\n"
        "[analytics]\n"
        "enabled = false\n"
    )


def codex_sandbox(server_url: str) -> str:
    """The ``[agents.main.sandbox]`` table a run needs for the Codex of :func:`codex_config`:
    its provider's host (a provider of Codex's own configuration, which ralph does not read)
    and the variable its ``env_key`` names."""
    port = urlsplit(server_url).port
    allow = f'allow = ["127.0.0.1:{port}"]\n'
    return f'\n[agents.main.sandbox]\n{allow}pass_env = ["{API_KEY_VARIABLE}"]\n'


CODEX_HOMES = Path.home() / ".cache" / "ralph-pipeline" / "codex-homes"
"""Where :func:`codex_home` makes each ``CODEX_HOME``: not under the temporary directory."""


@contextmanager
def codex_home() -> Iterator[Path]:
    """A fresh, empty ``CODEX_HOME`` under :data:`CODEX_HOMES`, removed afterwards.

    Not under pytest's ``tmp_path``: Codex links its sandbox helper (``codex-linux-sandbox``)
    into ``$CODEX_HOME/tmp/arg0/`` and puts that folder on PATH, but refuses to when
    ``CODEX_HOME`` is under the temporary directory (``$TMPDIR``, else ``/tmp``). With a
    system bwrap older than 0.9 (Debian 12 ships 0.8), which has no ``--argv0``, Codex starts
    the helper inside the sandbox by that bare name, so every command then fails (``bwrap:
    execvp codex-linux-sandbox: No such file or directory``). Its bundled bwrap, used when
    there is no bwrap on PATH, names the helper by its full path, so the home did not matter
    before CI installed bubblewrap.
    """
    CODEX_HOMES.mkdir(parents=True, exist_ok=True)
    folder = Path(tempfile.mkdtemp(dir=CODEX_HOMES))
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def codex_environment(
    home: Path, codex_home: Path, server_url: str, program: Path
) -> dict[str, str]:
    """The variables that make ``program`` (codex) use the server, with ``home`` as its only
    home and ``codex_home`` (from :func:`codex_home`) as ``CODEX_HOME``, holding
    :func:`codex_config`."""
    (codex_home / "config.toml").write_text(codex_config(server_url))
    return {
        "HOME": str(home),
        "CODEX_HOME": str(codex_home),
        "XDG_CONFIG_HOME": str(home / ".config"),
        "XDG_CACHE_HOME": str(home / ".cache"),
        "XDG_DATA_HOME": str(home / ".local" / "share"),
        "XDG_STATE_HOME": str(home / ".local" / "state"),
        API_KEY_VARIABLE: "scripted-dummy-key",
        "PATH": path_with(program),
    }


def exec_once(
    program: Path, root: Path, script: Script, *extra: str, prompt: bytes = b"Say hello."
) -> tuple[subprocess.CompletedProcess[bytes], tuple[Exchange, ...]]:
    """The codex preset's argv (``extra`` after it, as ralph adds ``--model``) run once, its
    prompt on stdin, in a fresh git repository under ``root`` against a server answering
    from ``script``; stderr is merged into stdout as ralph's log file merges them."""
    workspace = root / "workspace"
    workspace.mkdir(parents=True)
    git(workspace, "init", "--quiet")
    with ModelServer(script) as server, codex_home() as config:
        env = codex_environment(root / "home", config, server.url, program)
        done = subprocess.run(
            [str(program), *PRESETS["codex"].argv[1:], *extra],
            input=prompt,
            cwd=workspace,
            env={**os.environ, **env},
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            timeout=120,
            check=False,
        )
        return done, server.exchanges


def scrub(output: bytes, root: Path) -> bytes:
    """``output`` without the temporary folder's path, so a fixture stays the same."""
    return re.sub(re.escape(str(root).encode()), b"/TMP", output)


def capture(folder: Path, root: Path, cases: Sequence[tuple[str, Script]]) -> None:
    """Run each case's script through the installed pinned Codex and keep its output as
    ``folder/<name>.jsonl``."""
    from tests.agent_clis import install

    program = install("codex")
    folder.mkdir(parents=True, exist_ok=True)
    for name, script in cases:
        done, _ = exec_once(program, root / name, script)
        (folder / f"{name}.jsonl").write_bytes(scrub(done.stdout, root / name))


def _working(request: ModelRequest) -> ModelReply:
    """Three model turns: a command, a file written, a closing text; cache reads grow."""
    turns = (
        ModelReply(
            actions=(Shell("echo hello"),),
            usage=Usage(input_tokens=1200, output_tokens=40, cache_read_tokens=0),
        ),
        ModelReply(
            actions=(WriteFile(path="notes.txt", content="a\n"),),
            usage=Usage(input_tokens=300, output_tokens=60, cache_read_tokens=1100),
        ),
    )
    closing = ModelReply(
        text="Done.", usage=Usage(input_tokens=150, output_tokens=12, cache_read_tokens=1400)
    )
    return turns[request.turn] if request.turn < len(turns) else closing


def _limited(request: ModelRequest) -> ModelReply:
    return ModelReply(error=ApiError(status=429, message="Rate limit reached.", retry_after_s=1))


FIXTURE_CASES: Sequence[tuple[str, Script]] = (("working", _working), ("rate-limited", _limited))
"""The invocations whose output ``tests/fixtures/agent_output/codex/`` keeps, by file name."""
FIXTURES = Path(__file__).parent.parent / "fixtures" / "agent_output" / "codex"
"""Where the captured output lives."""


if __name__ == "__main__":  # python -m tests.real_agents.codex SCRATCH: capture again
    capture(FIXTURES, Path(sys.argv[1]), FIXTURE_CASES)
