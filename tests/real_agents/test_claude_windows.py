"""A Claude subscription's usage windows with the real Claude Code (the pinned release), offline:
the scripted model server sends Anthropic's ``anthropic-ratelimit-unified-*`` headers, and
Claude Code, logged in through a gateway token (which reads those headers as a subscription
does; an API key does not), reports them in its own ``rate_limit_event`` lines. ralph waits out
a rejected window until the reset Claude Code reports and finishes by itself, and stops
before a window it was told is nearly spent (``docs/architecture/limits.md``)."""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import attrs
import pytest

from tests.model_server import (
    ApiError,
    ModelReply,
    ModelRequest,
    ModelServer,
    by_kind,
    fixing_pipeline,
)
from tests.real_agents.limits import gateway_token, unified
from tests.real_agents.repo import FIXED_APP, failing_repo, run_ralph, stored_events
from tests.real_agents.test_claude import claude_environment

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("own_environment")]


def _subscriber(server_url: str, home: Path, program: Path) -> dict[str, str]:
    """Claude Code pointed at the server, logged in as a gateway (no API key), retrying
    nothing itself so that ralph sees the limit at once."""
    env = claude_environment(server_url, home, program)
    del env["ANTHROPIC_API_KEY"]
    return {**env, "ANTHROPIC_AUTH_TOKEN": gateway_token(), "CLAUDE_CODE_MAX_RETRIES": "0"}


def _window(status: str, reset: int, utilization: str) -> dict[str, str]:
    """The headers of a five-hour window ``status`` until ``reset`` (epoch seconds)."""
    return unified(
        status,
        reset,
        **{"5h_status": status, "5h_utilization": utilization, "5h_reset": str(reset)},
    )


def test_a_rejected_five_hour_window_is_waited_out_and_the_run_finishes_by_itself(
    tmp_path: Path, agent_cli: Callable[[str], Path]
) -> None:
    """Every request is refused (429, window rejected) until a reset 4 s ahead, then served:
    ralph records the limit with the reset Claude Code reported, waits until then, and the same
    agent goes on to fix the repository; exit 0."""
    program = agent_cli("claude")
    fixing = by_kind(fixing_pipeline("app.py", FIXED_APP))
    # The window is set 4 s after the first request, not after the test's start: on a loaded
    # machine Claude Code's own start can take longer than the window.
    resets: list[int] = []

    def script(request: ModelRequest) -> ModelReply:
        if not resets:
            resets.append(int(time.time()) + 4)
        if time.time() >= resets[0]:
            return fixing(request)
        return ModelReply(
            error=ApiError(status=429, message="Rate limit reached for requests.", retry_after_s=4),
            headers=_window("rejected", resets[0], "1.0"),
        )

    # No review pass: what follows the wait is the planner again and the developer; a
    # reviewer would only be one more invocation after them.
    root = failing_repo(tmp_path / "repo", '[agents.main]\npreset = "claude"\n')
    config = root / "ralph.toml"
    config.write_text(config.read_text().replace("max_review_passes = 1", "max_review_passes = 0"))
    with ModelServer(script) as server:
        done = run_ralph(root, _subscriber(server.url, tmp_path / "home", program), "run")
    assert done.returncode == 0, done.stdout + done.stderr
    (reset,) = resets
    assert (root / "app.py").read_text() == FIXED_APP
    facts = stored_events(root)
    (limited,) = [f for f in facts if f["type"] == "agent.provider_limited"]
    assert (limited["scope"], limited["window"]) == ("usage_window", "five_hour")
    told = datetime.fromisoformat(limited["resets_at"])
    assert told == datetime.fromtimestamp(reset, UTC)
    (awaited,) = [f for f in facts if f["type"] == "agent.limit_reset_awaited"]
    assert awaited["until"] == limited["resets_at"]
    assert datetime.fromisoformat(awaited["at"]) >= told
    planners = [
        f["agent"]
        for f in facts
        if f["type"] == "agent.invocation_started" and f["role"] == "planner"
    ]
    assert planners == ["main", "main"]
    assert facts[-1]["type"] == "lifecycle.run_completed"
    assert facts[-1]["reason"] == "completed"


def test_a_window_reported_nearly_spent_stops_the_run_before_its_next_agent(
    tmp_path: Path, agent_cli: Callable[[str], Path]
) -> None:
    """``[limits] stop_at_utilization = 0.9`` and a five-hour window Claude Code reports 95 %
    used after the planner: the run stops for a person (exit 3) before the developer starts,
    keeping the plan."""
    program = agent_cli("claude")
    reset = int(time.time()) + 3 * 3600
    fixing = by_kind(fixing_pipeline("app.py", FIXED_APP))
    warning = _window("allowed_warning", reset, "0.95")

    def script(request: ModelRequest) -> ModelReply:
        return attrs.evolve(fixing(request), headers=warning)

    root = failing_repo(
        tmp_path / "repo",
        '[agents.main]\npreset = "claude"\n\n[limits]\nstop_at_utilization = 0.9\n',
    )
    with ModelServer(script) as server:
        done = run_ralph(root, _subscriber(server.url, tmp_path / "home", program), "run")
    assert done.returncode == 3, done.stdout + done.stderr
    facts = stored_events(root)
    (window,) = [f for f in facts if f["type"] == "agent.usage_window_reported"]
    assert (window["role"], window["window"], window["utilization"]) == (
        "planner",
        "five_hour",
        0.95,
    )
    started = [f["role"] for f in facts if f["type"] == "agent.invocation_started"]
    assert started == ["planner"]
    assert [f for f in facts if f["type"] == "planning.plan_produced"]
    (stopped,) = [f for f in facts if f["type"] == "human.human_intervention_required"]
    assert stopped["reason"] == "PROVIDER_LIMIT"
