"""The ``codex`` preset with the real Codex CLI (pinned) against the scripted model server.

``ralph run`` plans, develops, commits, reviews and validates a repository whose test fails;
Codex edits the file and publishes ``build.done`` through its own shell tool
(``exec_command``, a ``bash -lc`` whose ``/etc/profile`` resets PATH, hence ``"$RALPH_BIN"``).
"""

from __future__ import annotations

import subprocess
from collections import Counter
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path

import attrs
import orjson
import pytest

from pipeline.core.agents.codex import codex_limit, parse_codex
from pipeline.events import LimitScope
from tests.model_server import (
    ApiError,
    Exchange,
    ModelReply,
    ModelRequest,
    ModelServer,
    Script,
    Usage,
    by_kind,
    fixing_pipeline,
)
from tests.real_agents.codex import (
    FIXTURE_CASES,
    FIXTURES,
    codex_environment,
    codex_home,
    codex_sandbox,
    exec_once,
)
from tests.real_agents.repo import (
    FIXED_APP,
    PYTHON,
    assert_sandboxed,
    failing_repo,
    git,
    run_ralph,
    stored_events,
)

pytestmark = pytest.mark.slow

CODEX_AGENT = (
    '[agents.main]\npreset = "codex"\nmodel = "scripted"\n'
    "inactivity_timeout_s = 60\ntimeout_s = 120\n\n"
    '[prices."scripted"]\n'
    "input_usd_per_mtok = 2.0\noutput_usd_per_mtok = 10.0\ncache_read_usd_per_mtok = 0.5\n"
)
"""Codex with a model ralph passes as ``--model`` and a price for it: Codex reports tokens
only, so ralph estimates the cost."""
PER_REQUEST = Usage(input_tokens=150, output_tokens=25, cache_read_tokens=50)
"""What the model reports for each request of the end-to-end run."""


def _with_usage(script: Script, usage: Usage) -> Script:
    def reporting(request: ModelRequest) -> ModelReply:
        return attrs.evolve(script(request), usage=usage)

    return reporting


def _requests_per_session(exchanges: Sequence[Exchange]) -> Counter[str]:
    """How many model requests each Codex session (thread) made; Codex sends its thread id
    as the ``prompt_cache_key``."""
    return Counter(str(e.body["prompt_cache_key"]) for e in exchanges)


def test_the_codex_preset_fixes_the_failing_repository(
    agent_cli: Callable[[str], Path], tmp_path: Path
) -> None:
    """Codex writes app.py with its own shell, publishes build.done from it and hands in every
    role's report; ralph commits the fix, the repository's test passes, and each invocation
    has a usage fact with the tokens the server reported and a cost estimated from them."""
    program = agent_cli("codex")
    root = failing_repo(tmp_path / "repo", CODEX_AGENT)
    script = _with_usage(by_kind(fixing_pipeline("app.py", FIXED_APP)), PER_REQUEST)
    with ModelServer(script) as server, codex_home() as config:
        env = codex_environment(tmp_path / "home", config, server.url, program)
        with (root / "ralph.toml").open("a") as toml:
            toml.write(codex_sandbox(server.url))
        done = run_ralph(root, env, "run", "--plain", timeout=300)
        exchanges = server.exchanges
        results = [request.last_tool_result or "" for request in server.model_requests()]
    assert done.returncode == 0, done.stdout + done.stderr
    assert_sandboxed(root, server.url)
    assert {(e.method, e.path, e.status) for e in exchanges} == {("POST", "/v1/responses", 200)}
    assert (root / "app.py").read_text() == FIXED_APP
    assert "app.py" in git(root, "log", "--name-only", "--format=%s", "main")
    assert git(root, "show", "HEAD:app.py") == FIXED_APP
    passed = subprocess.run(
        [PYTHON, "-m", "unittest", "-q"], cwd=root, capture_output=True, check=False
    )
    assert passed.returncode == 0
    facts = stored_events(root)
    topics = [f["topic"] for f in facts if f["type"] == "agent.topic_published"]
    assert topics == ["build.done"], topics
    # ... published by the command Codex ran in its own shell, which told the model so.
    assert any("Event emitted: build.done" in result for result in results)
    # One usage fact per invocation, with what the server answered that Codex session.
    sessions = _requests_per_session(exchanges)
    usage = [f for f in facts if f["type"] == "agent.usage_reported"]
    assert sorted(f["role"] for f in usage) == ["committer", "developer", "planner", "reviewer"]
    assert sorted(f["session_id"] for f in usage) == sorted(sessions)
    for fact in usage:
        requests = sessions[fact["session_id"]]
        figures = {key: fact[key] for key in _FIGURES}
        assert figures == {
            "agent": "main",
            "model": "scripted",
            "input_tokens": 150 * requests,
            "output_tokens": 25 * requests,
            "cache_read_tokens": 50 * requests,
            "cache_write_tokens": 0,
            "turns": 1,
            "api_duration_ms": None,
            "cost_source": "estimated",
        }
        per_request = (150 * 2.0 + 25 * 10.0 + 50 * 0.5) / 1e6
        assert fact["cost_usd"] == pytest.approx(per_request * requests)


_FIGURES = (
    "agent",
    "model",
    "input_tokens",
    "output_tokens",
    "cache_read_tokens",
    "cache_write_tokens",
    "turns",
    "api_duration_ms",
    "cost_source",
)


def test_the_pinned_codex_accepts_the_presets_argv(
    agent_cli: Callable[[str], Path], tmp_path: Path
) -> None:
    """The preset's argv, with a model after it as ralph adds one, is a valid command line of
    the pinned Codex: it exits 0 and its JSON lines report the server's usage."""
    program = agent_cli("codex")
    usage = Usage(input_tokens=700, output_tokens=45, cache_read_tokens=300)
    done, exchanges = exec_once(
        program, tmp_path, lambda _: ModelReply(text="Hello.", usage=usage), "--model", "scripted"
    )
    assert done.returncode == 0, done.stdout.decode()
    assert [(e.path, e.status) for e in exchanges] == [("/v1/responses", 200)]
    figures = parse_codex(done.stdout.splitlines())
    reported = (figures.input_tokens, figures.cache_read_tokens, figures.output_tokens)
    assert reported == (700, 300, 45)
    assert figures.turns == 1
    assert figures.session_id


def test_codex_gives_up_on_a_rate_limit_with_a_message_ralph_recognises(
    agent_cli: Callable[[str], Path], tmp_path: Path
) -> None:
    """A model that answers 429 (with retry-after) to every request makes Codex retry once,
    as configured, then exit non-zero; ralph reads its ``turn.failed`` as a limit on
    requests."""
    program = agent_cli("codex")
    limited = ModelReply(error=ApiError(status=429, message="Rate limit reached.", retry_after_s=1))
    done, exchanges = exec_once(program, tmp_path, lambda _: limited)
    assert done.returncode != 0
    assert [e.status for e in exchanges] == [429, 429]
    found = codex_limit(done.stdout.splitlines(), datetime.now(UTC), UTC)
    assert found is not None
    assert (found.scope, found.source) == (LimitScope.REQUESTS, "codex turn.failed")
    assert "429 Too Many Requests" in found.message


def _event_types(output: bytes) -> list[str]:
    types = []
    for line in output.splitlines():
        if line.startswith(b"{"):
            types.append(orjson.loads(line)["type"])
    return types


@pytest.mark.parametrize(("name", "script"), FIXTURE_CASES, ids=[n for n, _ in FIXTURE_CASES])
def test_the_captured_output_is_what_the_pinned_codex_prints(
    agent_cli: Callable[[str], Path], tmp_path: Path, name: str, script: Script
) -> None:
    """The fixtures the usage parser is tested with still match the pinned Codex: the same
    events in the same order, parsed to the same figures (the thread id aside)."""
    program = agent_cli("codex")
    done, _ = exec_once(program, tmp_path, script)
    kept = (FIXTURES / f"{name}.jsonl").read_bytes()
    assert _event_types(done.stdout) == _event_types(kept)
    parse = parse_codex
    now, then = parse(done.stdout.splitlines()), parse(kept.splitlines())
    assert attrs.evolve(now, session_id=None) == attrs.evolve(then, session_id=None)
