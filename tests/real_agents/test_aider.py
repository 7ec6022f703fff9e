"""aider (the pinned release) runs ralph's pipeline against the scripted model server.

aider is pointed at the server with ``OPENAI_API_BASE`` and a dummy key, the model named
``openai/<name>``; its model metadata (context size, prices) comes from
``~/.aider.model.metadata.json`` in a HOME of the test's own, and litellm reads its bundled
price map (``LITELLM_LOCAL_MODEL_COST_MAP``), so nothing is fetched from the network. aider
offers the model no tools: the server answers with file listings of its ``whole`` edit
format. aider runs no commands under ``--yes-always``, so it publishes no topic.
"""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Callable, Mapping
from pathlib import Path

import attrs
import orjson
import pytest

from pipeline.core.config import PRESETS
from pipeline.handlers.agents.usage import read_usage
from tests.model_server import (
    ModelReply,
    ModelRequest,
    ModelServer,
    Playbook,
    Shell,
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

MODEL = "openai/scripted"
PRICES = {"input_cost_per_token": 0.000002, "output_cost_per_token": 0.00001}
"""Per token, in USD: aider prints the cost of each message when it knows the prices."""


def aider_env(
    home: Path, url: str, program: Path, prices: Mapping[str, float] | None = None
) -> dict[str, str]:
    """The environment that points aider at the server at ``url``, isolated in ``home``.

    ``home/.aider.model.metadata.json`` describes the model (with ``prices``, if given), so
    aider neither warns about an unknown model nor downloads litellm's price list.
    """
    home.mkdir(parents=True, exist_ok=True)
    metadata = {
        MODEL: {
            "max_input_tokens": 128000,
            "max_output_tokens": 8192,
            "litellm_provider": "openai",
            "mode": "chat",
            **(prices or {}),
        }
    }
    (home / ".aider.model.metadata.json").write_bytes(orjson.dumps(metadata))
    return {
        "HOME": str(home),
        "XDG_CONFIG_HOME": str(home / ".config"),
        "XDG_DATA_HOME": str(home / ".local" / "share"),
        "XDG_CACHE_HOME": str(home / ".cache"),
        "XDG_STATE_HOME": str(home / ".local" / "state"),
        "PATH": path_with(program),
        "OPENAI_API_BASE": f"{url}/v1",
        "OPENAI_API_KEY": "sk-scripted-dummy-key",  # unlike any model name: it is masked
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",
    }


def all_at_once(playbooks: Mapping[str, Playbook]) -> dict[str, Playbook]:
    """Each role's actions in one reply, without its shell commands.

    One aider invocation is one model request (after its few-shot examples, which count as
    three turns of the conversation): every file of the role is written at once, and aider
    runs no command.
    """
    books = {}
    for kind, book in playbooks.items():
        actions = tuple(
            action
            for step in book.steps
            for action in step.actions
            if not isinstance(action, Shell)
        )
        books[kind] = Playbook(closing=ModelReply(text="Here it is.", actions=actions))
    return books


def test_aider_fixes_the_failing_repository(
    tmp_path: Path, agent_cli: Callable[[str], Path]
) -> None:
    """``ralph run`` with the aider preset plans, fixes app.py and hands in every report
    through aider's whole-file edits; nothing of aider's own reaches a commit."""
    program = agent_cli("aider")
    usage = Usage(input_tokens=1200, output_tokens=80, cache_read_tokens=300)
    books = all_at_once(fixing_pipeline("app.py", FIXED_APP))

    def script(request: ModelRequest) -> ModelReply:
        return attrs.evolve(by_kind(books)(request), usage=usage)

    with ModelServer(script) as server:
        env = aider_env(tmp_path / "home", server.url, program, PRICES)
        root = failing_repo(
            tmp_path / "repo", f'[agents.main]\npreset = "aider"\nmodel = "{MODEL}"\n'
        )
        started = time.monotonic()
        done = run_ralph(root, env, "run")
        elapsed = time.monotonic() - started
        exchanges = server.exchanges
    assert done.returncode == 0, done.stdout + done.stderr
    assert_sandboxed(root, server.url)
    assert (root / "app.py").read_text() == FIXED_APP
    assert FIXED_APP in git(root, "show", "HEAD:app.py")
    # nothing of aider's own (.aider.chat.history.md, .aider.tags.cache.v4, a .gitignore)
    # nor ralph's reaches a commit
    tracked = set(git(root, "ls-files").split())
    assert tracked == {"app.py", "test_app.py"}, tracked
    assert not [p for p in os.listdir(root) if p.startswith(".aider")]
    events = stored_events(root)
    assert not [e for e in events if e["type"] == "agent.topic_published"]
    assert all(e.request is not None and not e.request.tools for e in exchanges)
    # each invocation's log reads as the usage the server reported ("1.5k sent": aider
    # does not see OpenAI's cached count) and the cost aider computed from the prices
    logs = sorted((root / ".ralph" / "runs").glob("*/logs/*-main-*.log"))
    assert len(logs) == len(exchanges)
    for log in logs:
        figures = read_usage("aider", log)
        assert (figures.model, figures.turns) == (MODEL, 1)
        assert (figures.input_tokens, figures.output_tokens) == (1500, 80)
        assert figures.cost_usd == pytest.approx(1500 * 0.000002 + 80 * 0.00001, rel=0.02)
    # one usage fact per invocation, the cost as aider reported it
    facts = [e for e in events if e["type"] == "agent.usage_reported"]
    assert sorted(str(f["role"]) for f in facts) == [
        "committer",
        "developer",
        "planner",
        "reviewer",
    ]
    for fact in facts:
        assert (fact["model"], fact["input_tokens"], fact["output_tokens"]) == (MODEL, 1500, 80)
        assert (fact["turns"], fact["cost_source"]) == (1, "reported")
        assert fact["cost_usd"] == pytest.approx(0.0038)
    print(f"aider run took {elapsed:.1f}s, {len(exchanges)} requests")


def test_aider_accepts_the_preset_argv(tmp_path: Path, agent_cli: Callable[[str], Path]) -> None:
    """The pinned aider takes the preset's argv as it is and prints its usage line: a
    rejected flag fails this test."""
    program = agent_cli("aider")
    prompt = tmp_path / "prompt.md"
    prompt.write_text("Say hello.\n")
    argv = [a.replace("{prompt_file}", str(prompt)) for a in PRESETS["aider"].argv]
    work = tmp_path / "work"
    work.mkdir()
    with ModelServer(by_kind({})) as server:
        env = aider_env(tmp_path / "home", server.url, program)
        done = subprocess.run(
            [str(program), *argv[1:], "--model", MODEL],
            cwd=work,
            env={**os.environ, **env},
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        requests = server.model_requests()
    assert done.returncode == 0, done.stdout + done.stderr
    assert requests, "aider sent no model request"
    assert "Say hello." in requests[-1].prompt
    assert "Tokens: 100 sent, 20 received." in done.stdout, done.stdout
    assert os.listdir(work) == [], "aider left files in the work tree"
    log = tmp_path / "aider.log"
    log.write_text(done.stdout + done.stderr)
    figures = read_usage("aider", log)
    assert (figures.input_tokens, figures.output_tokens, figures.cost_usd) == (100, 20, None)
