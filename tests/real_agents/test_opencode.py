"""OpenCode (the pinned release) runs ralph's pipeline against the scripted model server.

OpenCode is pointed at the server with an OpenAI-compatible provider in ``opencode.json``
(``@ai-sdk/openai-compatible``, which the opencode binary bundles, with ``options.baseURL``),
in a HOME and XDG folders of the test's own, with auto-update, sharing, the model list fetch
and the LSP downloads switched off.
"""

from __future__ import annotations

import os
import re
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from urllib.parse import urlsplit

import attrs
import orjson
import pytest

from pipeline.core.config import PRESETS, PromptVia
from pipeline.handlers.agents.usage import read_usage
from tests.model_server import (
    ModelReply,
    ModelRequest,
    ModelServer,
    Script,
    Usage,
    by_kind,
    fixing_pipeline,
)
from tests.real_agents.repo import (
    FIXED_APP,
    assert_sandboxed,
    failing_repo,
    git,
    path_with,
    run_ralph,
    stored_events,
)

pytestmark = pytest.mark.slow

MODEL = "scripted"
"""The model's id under the provider ``ralph`` (``ralph/scripted``)."""


def opencode_env(home: Path, url: str, program: Path) -> dict[str, str]:
    """The environment that points opencode at the server at ``url``, isolated in ``home``.

    Writes ``opencode.json`` into ``home``'s config folder: a provider ``ralph`` speaking
    Chat Completions to ``url``, its one model the default, auto-update and sharing off, and
    its snapshots off: OpenCode's own undo history, a git repository of the work tree it
    rebuilds in its data folder at each start (about a second of CPU per invocation, three
    on the first), which no test reads and ralph never uses.
    """
    config = home / ".config"
    (config / "opencode").mkdir(parents=True, exist_ok=True)
    (config / "opencode" / "opencode.json").write_bytes(
        orjson.dumps(
            {
                "$schema": "https://opencode.ai/config.json",
                "autoupdate": False,
                "share": "disabled",
                "snapshot": False,
                "model": f"ralph/{MODEL}",
                "provider": {
                    "ralph": {
                        "npm": "@ai-sdk/openai-compatible",
                        "name": "ralph scripted model",
                        "options": {"baseURL": f"{url}/v1", "apiKey": "scripted"},
                        "models": {MODEL: {"name": MODEL}},
                    }
                },
            },
            option=orjson.OPT_INDENT_2,
        )
    )
    return {
        "HOME": str(home),
        "XDG_CONFIG_HOME": str(config),
        "XDG_DATA_HOME": str(home / ".local" / "share"),
        "XDG_CACHE_HOME": str(home / ".cache"),
        "XDG_STATE_HOME": str(home / ".local" / "state"),
        "PATH": path_with(program),
        "OPENCODE_DISABLE_AUTOUPDATE": "1",
        "OPENCODE_DISABLE_SHARE": "1",
        "OPENCODE_DISABLE_MODELS_FETCH": "1",
        "OPENCODE_DISABLE_LSP_DOWNLOAD": "1",
        # no plugins: opencode would otherwise install its plugin package from npm at start
        "OPENCODE_PURE": "1",
    }


def opencode_sandbox(url: str) -> str:
    """The ``[agents.main.sandbox]`` table a run needs for the OpenCode of :func:`opencode_env`:
    its ``ralph`` provider's host (defined in ``opencode.json``, which ralph does not read)."""
    return f'\n[agents.main.sandbox]\nallow = ["127.0.0.1:{urlsplit(url).port}"]\n'


AGENT_TOML = f"""[agents.main]
preset = "opencode"
model = "ralph/{MODEL}"

[prices."ralph/{MODEL}"]
input_usd_per_mtok = 2.0
output_usd_per_mtok = 10.0
cache_read_usd_per_mtok = 0.5
"""
"""The opencode agent, its model named (through the preset's ``--model``), and its prices:
opencode reports no cost for a model it has no price for, so ralph estimates it."""

_USAGE_KEYS = (
    "agent",
    "model",
    "input_tokens",
    "output_tokens",
    "cache_read_tokens",
    "cache_write_tokens",
    "turns",
    "cost_source",
)


def with_usage(script: Script, usage: Usage) -> Script:
    """``script`` with every reply reporting ``usage``, so that the totals are known."""

    def scripted(request: ModelRequest) -> ModelReply:
        return attrs.evolve(script(request), usage=usage)

    return scripted


def _by_type(events: list[dict[str, object]], tag: str) -> list[dict[str, object]]:
    return [e for e in events if e["type"] == tag]


def test_opencode_fixes_the_failing_repository(
    tmp_path: Path, agent_cli: Callable[[str], Path]
) -> None:
    """``ralph run`` with the opencode preset plans, fixes app.py with opencode's own write
    tool, publishes build.done from its bash tool, reviews, commits and validates."""
    program = agent_cli("opencode")
    usage = Usage(input_tokens=1200, output_tokens=80, cache_read_tokens=300)
    playbooks = fixing_pipeline("app.py", FIXED_APP)
    with ModelServer(with_usage(by_kind(playbooks), usage)) as server:
        env = opencode_env(tmp_path / "home", server.url, program)
        root = failing_repo(tmp_path / "repo", AGENT_TOML + opencode_sandbox(server.url))
        started = time.monotonic()
        done = run_ralph(root, env, "run")
        elapsed = time.monotonic() - started
        exchanges = server.exchanges
    assert done.returncode == 0, done.stdout + done.stderr
    assert_sandboxed(root, server.url)
    assert (root / "app.py").read_text() == FIXED_APP
    assert FIXED_APP in git(root, "show", "HEAD:app.py")
    # nothing of opencode's own (nor ralph's) reaches a commit
    tracked = set(git(root, "ls-files").split())
    assert tracked == {"app.py", "test_app.py"}, tracked
    events = stored_events(root)
    topics = _by_type(events, "agent.topic_published")
    assert [t["topic"] for t in topics] == ["build.done"], topics
    unknown = [e for e in exchanges if e.request is None and e.method == "POST"]
    assert not unknown, unknown
    assert all(e.request is not None and e.request.stream for e in exchanges if e.request)
    # each invocation's log reads as the usage the server reported for its requests
    logs = sorted((root / ".ralph" / "runs").glob("*/logs/*-main-*.log"))
    figures = [read_usage("opencode-json", log) for log in logs]
    assert sum(f.turns or 0 for f in figures) == len(exchanges)
    for f in figures:
        assert f.turns
        assert (f.input_tokens, f.output_tokens, f.cache_read_tokens) == (
            1200 * f.turns,
            80 * f.turns,
            300 * f.turns,
        )
        assert f.cost_usd is None, "opencode's 0 for an unpriced model is not a cost"
    # one usage fact per invocation: the server's figures, the cost estimated from [prices]
    # (opencode's own 0 says nothing), the session opencode named
    facts = _by_type(events, "agent.usage_reported")
    assert sorted(str(f["role"]) for f in facts) == [
        "committer",
        "developer",
        "planner",
        "reviewer",
    ]
    by_session = {f.session_id: f for f in figures}
    assert sorted(str(f["session_id"]) for f in facts) == sorted(map(str, by_session))
    for fact in facts:
        turns = by_session[str(fact["session_id"])].turns or 0
        assert {k: fact[k] for k in _USAGE_KEYS} == {
            "agent": "main",
            "model": f"ralph/{MODEL}",
            "input_tokens": 1200 * turns,
            "output_tokens": 80 * turns,
            "cache_read_tokens": 300 * turns,
            "cache_write_tokens": 0,
            "turns": turns,
            "cost_source": "estimated",
        }
        cost = fact["cost_usd"]
        assert isinstance(cost, float)
        assert cost == pytest.approx(turns * (1200 * 2 + 80 * 10 + 300 * 0.5) / 1e6)
    print(f"opencode run took {elapsed:.1f}s, {len(exchanges)} requests")


def test_opencode_accepts_the_preset_argv(tmp_path: Path, agent_cli: Callable[[str], Path]) -> None:
    """The pinned opencode takes the preset's argv as it is, the prompt on stdin, and answers
    in JSON lines: a usage error or a rejected flag fails this test."""
    program = agent_cli("opencode")
    preset = PRESETS["opencode"]
    assert preset.prompt_via is PromptVia.STDIN
    work = tmp_path / "work"
    work.mkdir()
    with ModelServer(by_kind({})) as server:
        env = opencode_env(tmp_path / "home", server.url, program)
        done = subprocess.run(
            [str(program), *preset.argv[1:]],
            input="# Say hello.\n",
            cwd=work,
            # OpenCode takes its project from PWD before its working directory: without this
            # it would open (and index) the folder pytest runs in.
            env={**os.environ, **env, "PWD": str(work)},
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        requests = server.model_requests()
    assert done.returncode == 0, done.stdout + done.stderr
    assert requests, "opencode sent no model request"
    assert "\n# Say hello.\n" in requests[0].prompt, "the prompt is not the user's text as it is"
    lines = [orjson.loads(line) for line in done.stdout.splitlines() if line.strip()]
    assert any(line.get("type") == "step_finish" for line in lines), done.stdout
    # it opened ``work`` as its project, as its own log says, not the folder pytest runs in
    logs = (tmp_path / "home" / ".local" / "share" / "opencode" / "log").glob("*.log")
    opened = {
        m
        for log in logs
        for m in re.findall(r'"creating instance" directory=(\S+)', log.read_text())
    }
    assert opened == {str(work)}, opened
