"""Claude Code (the pinned release) runs ralph's pipeline with the ``claude`` preset, offline,
against the scripted model server speaking the Anthropic Messages API.

Claude Code is pointed at the server with ``ANTHROPIC_BASE_URL`` and a dummy
``ANTHROPIC_API_KEY``; ``HOME`` and ``CLAUDE_CONFIG_DIR`` are throwaway folders, so the
person's own settings, sessions and credentials are never read or written, and every call
besides the model API is turned off. The preset works as root too (CI and containers run as
root), without ``IS_SANDBOX``: these tests run as whichever user runs the suite.
"""

from __future__ import annotations

import os
import subprocess
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import attrs
import orjson
import pytest

from pipeline.core.config import PRESETS
from tests.model_server import (
    ApiError,
    ModelReply,
    ModelRequest,
    ModelServer,
    Playbook,
    Script,
    Shell,
    Usage,
    WriteFile,
    by_kind,
    fixing_pipeline,
    prompt_kind,
)
from tests.real_agents.repo import (
    FIXED_APP,
    PYTHON,
    assert_sandboxed,
    failing_repo,
    git,
    path_with,
    run_ralph,
    stored_events,
)

pytestmark = pytest.mark.slow

ROLES = {
    "planning": "planner",
    "development": "developer",
    "review": "reviewer",
    "commit_message": "committer",
}
"""The role each of ralph's prompt kinds in this run is for."""
USAGE = Usage(input_tokens=120, output_tokens=30, cache_read_tokens=7, cache_write_tokens=5)
"""What every scripted reply reports, so the figures in the logs can be told apart."""


def claude_environment(server_url: str, home: Path, program: Path) -> dict[str, str]:
    """The variables that point Claude Code at the server and keep it to itself."""
    return {
        "PATH": path_with(program),
        "HOME": str(home),
        "CLAUDE_CONFIG_DIR": str(home / ".claude"),
        "XDG_CONFIG_HOME": str(home / ".config"),
        "XDG_CACHE_HOME": str(home / ".cache"),
        "XDG_DATA_HOME": str(home / ".local" / "share"),
        "XDG_STATE_HOME": str(home / ".local" / "state"),
        "ANTHROPIC_BASE_URL": server_url,
        "ANTHROPIC_API_KEY": "sk-ant-scripted-model",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "DISABLE_AUTOUPDATER": "1",
        "DISABLE_TELEMETRY": "1",
        "DISABLE_ERROR_REPORTING": "1",
        "CLAUDE_CODE_MAX_RETRIES": "1",
    }


def _script_with(usage: Usage) -> Script:
    """ralph's fixing pipeline, every reply reporting ``usage``."""
    inner = by_kind(fixing_pipeline("app.py", FIXED_APP))

    def script(request: ModelRequest) -> ModelReply:
        return attrs.evolve(inner(request), usage=usage)

    return script


@pytest.mark.usefixtures("own_environment")
def test_ralph_run_with_the_claude_preset_fixes_the_repository(
    tmp_path: Path, agent_cli: Callable[[str], Path]
) -> None:
    """plan, develop, commit, review and validate with Claude Code's own tools: app.py is
    fixed and committed, the test passes, ``build.done`` came from Claude's Bash tool, and the
    usage fact of each invocation holds the tokens the server reported to it, the model it
    asked for, and the cost Claude Code computed (``reported``)."""
    program = agent_cli("claude")
    root = failing_repo(tmp_path / "repo", '[agents.main]\npreset = "claude"\n')
    with ModelServer(_script_with(USAGE)) as server:
        done = run_ralph(
            root, claude_environment(server.url, tmp_path / "home", program), "run", "--plain"
        )
        exchanges = server.exchanges
    assert done.returncode == 0, done.stdout + done.stderr
    assert_sandboxed(root, server.url)
    assert (root / "app.py").read_text() == FIXED_APP
    assert "app.py" in git(root, "show", "--stat", "HEAD~0", "--format=")
    assert "return 42" in git(root, "log", "-p", "--format=%s")
    tested = subprocess.run(
        [PYTHON, "-m", "unittest", "-q"], cwd=root, capture_output=True, check=False
    )
    assert tested.returncode == 0
    facts = stored_events(root)
    published = [f for f in facts if f["type"] == "agent.topic_published"]
    assert any(f.get("topic") == "build.done" for f in published), published
    unanswered = [e for e in exchanges if e.status != 200]
    assert unanswered == [], [(e.method, e.path, e.status) for e in unanswered]
    assert all(e.path == "/v1/messages" for e in exchanges)
    asked = Counter(
        ROLES[kind]
        for e in exchanges
        if e.request is not None and (kind := prompt_kind(e.request.prompt)) is not None
    )
    assert set(asked) == set(ROLES.values())
    reported = [f for f in facts if f["type"] == "agent.usage_reported"]
    assert sorted(f["role"] for f in reported) == sorted(asked)
    models = {e.request.model for e in exchanges if e.request is not None}
    for fact in reported:
        requests = asked[fact["role"]]
        assert fact["input_tokens"] == USAGE.input_tokens * requests, fact
        assert fact["output_tokens"] == USAGE.output_tokens * requests, fact
        assert fact["cache_read_tokens"] == USAGE.cache_read_tokens * requests, fact
        assert fact["cache_write_tokens"] == USAGE.cache_write_tokens * requests, fact
        assert fact["cost_source"] == "reported", fact
        assert fact["cost_usd"] > 0
        assert {fact["model"]} == models
        assert fact["session_id"]
        assert fact["turns"] >= requests


@pytest.mark.usefixtures("own_environment")
def test_the_pinned_claude_accepts_the_preset_argv(
    tmp_path: Path, agent_cli: Callable[[str], Path]
) -> None:
    """The preset's argv, as ralph runs it (prompt on stdin), is accepted by the pinned CLI:
    it asks the model, carries out a write and a command, and ends with a success result. The
    first answer is a slow stream (each event 50 ms apart), which it waits for."""
    program = agent_cli("claude")
    work = tmp_path / "work"
    work.mkdir()

    def script(request: ModelRequest) -> ModelReply:
        turn = request.turn
        steps = (WriteFile(path="note.txt", content="written\n"), Shell("echo ran > ran.txt"))
        if turn >= len(steps):
            return ModelReply(text="Done.")
        return ModelReply(actions=(steps[turn],), chunk_delay_s=0.05 if turn == 0 else 0.0)

    argv = [str(program), *PRESETS["claude"].argv[1:]]
    with ModelServer(script) as server:
        done = subprocess.run(
            argv,
            input=b"Write note.txt, then run a command.",
            cwd=work,
            env={**os.environ, **claude_environment(server.url, tmp_path / "home", program)},
            capture_output=True,
            timeout=120,
            check=False,
        )
        requests = server.model_requests()
    assert done.returncode == 0, done.stdout + done.stderr
    assert (work / "note.txt").read_text() == "written\n"
    assert (work / "ran.txt").read_text() == "ran\n"
    assert len(requests) == 3
    results = [
        orjson.loads(line)
        for line in done.stdout.splitlines()
        if line.startswith(b'{"') and b'"type":"result"' in line
    ]
    assert [r["subtype"] for r in results] == ["success"]
    assert results[0]["permission_denials"] == []


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0, reason="needs root")
@pytest.mark.usefixtures("own_environment")
def test_as_root_the_pinned_claude_refuses_bypass_unless_is_sandbox(
    tmp_path: Path, agent_cli: Callable[[str], Path]
) -> None:
    """Why ralph refuses that configuration up front (``pipeline.handlers.agents.pitfalls``):
    as root the pinned CLI exits 1 on ``--dangerously-skip-permissions`` before asking the
    model, and runs with ``IS_SANDBOX=1``. When a release drops the refusal, this fails."""
    program = agent_cli("claude")
    argv = [str(program), *PRESETS["claude"].argv[1:], "--dangerously-skip-permissions"]
    with ModelServer(by_kind({})) as server:
        environment = {**os.environ, **claude_environment(server.url, tmp_path / "h", program)}
        refused = subprocess.run(
            argv, input=b"hi", cwd=tmp_path, env=environment, capture_output=True, timeout=60
        )
        assert server.exchanges == ()
        sandboxed = subprocess.run(
            argv,
            input=b"hi",
            cwd=tmp_path,
            env={**environment, "IS_SANDBOX": "1"},
            capture_output=True,
            timeout=60,
        )
        asked = len(server.model_requests())
    assert refused.returncode == 1
    assert b"cannot be used with root/sudo privileges" in refused.stderr
    assert sandboxed.returncode == 0, sandboxed.stdout + sandboxed.stderr
    assert asked == 1


@pytest.mark.usefixtures("own_environment")
def test_a_rate_limited_claude_is_reported_as_limited_by_its_provider(
    tmp_path: Path, agent_cli: Callable[[str], Path]
) -> None:
    """Every request answered 429 with ``retry-after``: Claude Code gives up after its retry and
    exits 1, and ralph records a provider limit on requests, read from Claude's own ``result``
    line (``api_error_status``), with no reset told, and a usage fact of nothing spent."""
    program = agent_cli("claude")
    root = failing_repo(tmp_path / "repo", '[agents.main]\npreset = "claude"\n')
    # ralph's own retries of the agent add nothing to the claim: each is one more limit alike
    config = root / "ralph.toml"
    config.write_text(
        config.read_text().replace("max_retries_per_agent = 1", "max_retries_per_agent = 0")
    )
    limited = ModelReply(error=ApiError(status=429, message="scripted rate limit", retry_after_s=0))
    with ModelServer(lambda request: limited) as server:
        done = run_ralph(
            root, claude_environment(server.url, tmp_path / "home", program), "run", "--plain"
        )
        asked = len(server.model_requests())
    assert done.returncode != 0
    facts = stored_events(root)
    limits = [f for f in facts if f["type"] == "agent.provider_limited"]
    assert limits, done.stdout + done.stderr
    assert {(f["scope"], f["resets_at"], f["source"]) for f in limits} == {
        ("requests", None, "claude result api_error_status 429")
    }
    assert not [f for f in facts if f["type"] == "agent.invocation_failed"]
    assert asked >= 2 * len(limits), "Claude Code retried each request once"
    usage = [f for f in facts if f["type"] == "agent.usage_reported"]
    assert len(usage) == len(limits)
    spent = {
        (f["input_tokens"], f["output_tokens"], f["cost_usd"], f["cost_source"]) for f in usage
    }
    assert spent == {(0, 0, 0.0, "reported")}, "nothing was spent, as Claude Code says itself"
    # Claude Code's own retry (its system/api_retry line) is noted with the usage.
    assert all(
        "the CLI retried 1 failed model request(s) itself (HTTP 429)" in f["note"] for f in usage
    )


def _reviewing_once(finding: str) -> Script:
    """ralph's fixing pipeline whose reviewer reports ``finding`` in its first review and
    nothing after, and whose fixer fixes nothing (the work was right)."""
    books = dict(fixing_pipeline("app.py", FIXED_APP))
    reviews = [Playbook(steps=_review_steps(finding)), books["review"]]
    inner = by_kind(books)
    started = [0]  # reviews begun so far

    def script(request: ModelRequest) -> ModelReply:
        if prompt_kind(request.prompt) != "review" or not request.tools:
            return inner(request)
        if request.turn == 0:
            started[0] += 1
        return reviews[min(started[0], 2) - 1].reply(request.turn)

    return script


def _review_steps(finding: str) -> tuple[ModelReply, ...]:
    return (ModelReply(actions=(WriteFile(path=".agent/out/issues.md", content=finding),)),)


@pytest.mark.usefixtures("own_environment")
def test_a_bounced_developer_runs_its_ladders_next_model_in_claude_code(
    tmp_path: Path, agent_cli: Callable[[str], Path]
) -> None:
    """``[hats.developer] escalate``: the review finds an issue once, so the developer's fix
    runs the ladder's model: Claude Code, given it by the preset's ``--model``, asks the
    server for it; every other request asks for Claude Code's own default model."""
    program = agent_cli("claude")
    ladder = (
        '[hats.developer]\nescalate = ["claude-escalated-test"]\n'
        "escalate_after = { review_issues = 1 }\n"
    )
    root = failing_repo(tmp_path / "repo", f'[agents.main]\npreset = "claude"\n\n{ladder}')
    with ModelServer(_reviewing_once("- app.answer has no docstring\n")) as server:
        done = run_ralph(
            root, claude_environment(server.url, tmp_path / "home", program), "run", "--plain"
        )
        asked = [
            (prompt_kind(e.request.prompt), e.request.model)
            for e in server.exchanges
            if e.request is not None and e.request.tools
        ]
    assert done.returncode == 0, done.stdout + done.stderr
    escalated = {kind for kind, model in asked if model == "claude-escalated-test"}
    assert escalated == {"review_fix"}, asked
    started = [
        (f["role"], f["model"])
        for f in stored_events(root)
        if f["type"] == "agent.invocation_started"
    ]
    assert ("developer", "claude-escalated-test") in started
    assert [m for r, m in started if r != "developer"] == [None] * (len(started) - 2)
