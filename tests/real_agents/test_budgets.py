"""A cost budget stops a real run: Claude Code (the pinned release) reports what each
invocation cost, and ralph ends the run as ``max_cost`` where the next agent would start, also
when the run was killed with SIGKILL mid-invocation and resumed.

The scripted model reports large token counts, so Claude Code's own price table makes every
invocation cost a noticeable amount.
"""

from __future__ import annotations

import os
import signal
import subprocess
import threading
import time
from collections.abc import Callable
from pathlib import Path

import attrs
import pytest

from pipeline.handlers.runtime import WorkspaceLayout
from tests.model_server import (
    ModelReply,
    ModelRequest,
    ModelServer,
    Script,
    Usage,
    by_kind,
    fixing_pipeline,
    prompt_kind,
)
from tests.real_agents.repo import FIXED_APP, PYTHON, failing_repo, run_ralph, stored_events
from tests.real_agents.test_claude import claude_environment

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("own_environment")]

EXPENSIVE = Usage(input_tokens=100_000, output_tokens=20_000)
"""What every reply reports: with Claude's prices, tenths of a dollar per request."""


def _script(slow_development: threading.Event | None = None) -> Script:
    """ralph's fixing pipeline at :data:`EXPENSIVE` prices; its development replies trickle
    while ``slow_development`` is set (so a test can kill ralph mid-reply)."""
    inner = by_kind(fixing_pipeline("app.py", FIXED_APP))

    def script(request: ModelRequest) -> ModelReply:
        slow = (
            slow_development is not None
            and slow_development.is_set()
            and prompt_kind(request.prompt) == "development"
        )
        return attrs.evolve(inner(request), usage=EXPENSIVE, chunk_delay_s=0.4 if slow else 0.0)

    return script


def _facts(root: Path, kind: str) -> list[dict[str, object]]:
    return [f for f in stored_events(root) if f["type"] == kind]


@pytest.fixture(scope="module")
def planning_cost(
    tmp_path_factory: pytest.TempPathFactory, agent_cli: Callable[[str], Path]
) -> float:
    """What the planner's invocation costs in this setup (a run stopped right after it),
    measured once for the module's tests."""
    tmp_path = tmp_path_factory.mktemp("probe")
    program = agent_cli("claude")
    root = failing_repo(
        tmp_path / "probe", '[agents.main]\npreset = "claude"\n', budgets="max_cost_usd = 0.0001"
    )
    with ModelServer(_script()) as server:
        run_ralph(root, claude_environment(server.url, tmp_path / "home", program), "run")
    costs = [f["cost_usd"] for f in _facts(root, "agent.usage_reported")]
    assert len(costs) == 1
    assert isinstance(costs[0], float)
    return costs[0]


def test_a_cost_budget_ends_a_real_run_before_the_next_agent_starts(
    tmp_path: Path, agent_cli: Callable[[str], Path], planning_cost: float
) -> None:
    """A budget below the planner's cost: the planner's invocation finishes (its plan is
    kept), the developer never starts, ralph exits 2 as max_cost saying what was spent."""
    program = agent_cli("claude")
    cost = planning_cost
    assert cost > 0
    root = failing_repo(
        tmp_path / "repo",
        '[agents.main]\npreset = "claude"\n',
        budgets=f"max_cost_usd = {cost / 2}",
    )
    with ModelServer(_script()) as server:
        done = run_ralph(
            root, claude_environment(server.url, tmp_path / "home", program), "run", "--plain"
        )
    assert done.returncode == 2, done.stdout + done.stderr
    assert "max_cost" in done.stdout + done.stderr
    started = _facts(root, "agent.invocation_started")
    assert [f["role"] for f in started] == ["planner"]
    assert _facts(root, "planning.plan_produced")
    completed = _facts(root, "lifecycle.run_completed")
    assert [f["reason"] for f in completed] == ["max_cost"]


def test_a_budget_still_holds_after_kill_9_and_resume(
    tmp_path: Path, agent_cli: Callable[[str], Path], planning_cost: float
) -> None:
    """Killed with SIGKILL while the developer works, then resumed: the developer is run
    again, its cost spends the budget, and the committer never starts; the stored log and its
    checkpoints agree (``ralph replay --verify``)."""
    program = agent_cli("claude")
    cost = planning_cost
    root = failing_repo(
        tmp_path / "repo",
        '[agents.main]\npreset = "claude"\n',
        budgets=f"max_cost_usd = {cost * 1.5}",
    )
    env = {**os.environ, **claude_environment("http://127.0.0.1:1", tmp_path / "home", program)}
    trickle = threading.Event()
    trickle.set()
    with ModelServer(_script(slow_development=trickle)) as server:
        env["ANTHROPIC_BASE_URL"] = server.url
        driver = subprocess.Popen(
            [PYTHON, "-m", "pipeline.app.cli", "run", "--plain", "-C", str(root)],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        deadline = time.monotonic() + 120
        while not any(
            e.request is not None and prompt_kind(e.request.prompt) == "development"
            for e in server.exchanges
        ):
            assert time.monotonic() < deadline, "the developer never started"
            assert driver.poll() is None, "ralph ended before the developer started"
            time.sleep(0.05)
        os.kill(driver.pid, signal.SIGKILL)
        driver.wait()
        trickle.clear()  # the resumed developer's replies come at once
        resumed = run_ralph(root, env, "resume", "--plain")
        first_turns = [
            e.request
            for e in server.exchanges
            if e.request is not None
            and e.request.turn == 0
            and prompt_kind(e.request.prompt) == "development"
        ]
    assert resumed.returncode == 2, resumed.stdout + resumed.stderr
    # The killed invocation's start was committed before its process started, its outcome
    # never; the resumed run started the developer again (the same attempt), as the server saw.
    assert len(first_turns) == 2
    starts = _facts(root, "agent.invocation_started")
    assert [f["role"] for f in starts] == ["planner", "developer", "developer"]
    assert starts[1]["attempt"] == starts[2]["attempt"]
    usage = _facts(root, "agent.usage_reported")
    assert [f["role"] for f in usage] == ["planner", "developer"]
    assert [f["reason"] for f in _facts(root, "lifecycle.run_completed")] == ["max_cost"]
    verified = subprocess.run(
        [
            PYTHON,
            "-m",
            "pipeline.app.cli",
            "replay",
            str(WorkspaceLayout(root=root).store),
            "--verify",
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert verified.returncode == 0, verified.stdout + verified.stderr
