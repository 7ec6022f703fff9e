"""Each agent-chain decision, taken through real agent processes in real git repositories."""

from __future__ import annotations

import time
import uuid
from pathlib import Path

import pytest

from pipeline.core.state import Phase, TerminationReason
from pipeline.events import (
    BackoffWaited,
    CostSource,
    ErrorKind,
    InvocationFailed,
    InvocationStarted,
    InvocationTimedOut,
    LimitScope,
    PlanProduced,
    PromptFileProtected,
    ProviderLimited,
    TimeoutKind,
    UsageReported,
)
from tests.runtime.workspace import (
    FINISH_EVERYTHING,
    PYTHON,
    events_of,
    make_workspace,
    processes_with,
    ralph,
    run_here,
    scripted,
    then_finish,
)

# Whole runs in subprocesses, seconds a test: the fast loop has each decision from
# tests/reducers/test_decisions.py (retry, fall back, dev-fix, a success without its report),
# the process's timeout and group from tests/handlers/agents/, a rate limit's words from
# tests/handlers/test_limits_parsers.py and the prompt's mode from test_prompt_permissions.py.
pytestmark = pytest.mark.slow

CRASH_TWICE = then_finish(
    "planning",
    """
[[planning]]
print = "crash one"
exit = 1
[[planning]]
print = "crash two"
exit = 1
""",
)


def test_an_agent_that_exits_1_twice_is_retried_and_then_succeeds(tmp_path: Path) -> None:
    """Two retriable failures, each followed by a backoff, then the same agent succeeds."""
    root = make_workspace(
        tmp_path / "ws", scripts={"s.toml": CRASH_TWICE}, agents={"main": scripted("s.toml")}
    )
    result = run_here(root)
    assert result.state.phase is Phase.COMPLETE
    events = events_of(root, result)
    # The planner's facts; its usage facts are counted apart (one per invocation that ran).
    with_role = [e for e in events if getattr(e, "role", None) is not None]
    planner = [e for e in with_role if not isinstance(e, UsageReported)][:8]
    usage = [e for e in with_role[:11] if isinstance(e, UsageReported)]
    assert [u.cost_source for u in usage] == [CostSource.UNKNOWN] * 3
    assert "no output_format" in usage[0].note
    failures = [e for e in planner if isinstance(e, InvocationFailed)]
    assert [(f.error, f.retriable) for f in failures] == [(ErrorKind.NON_ZERO_EXIT, True)] * 2
    assert "crash two" in failures[1].message
    assert sum(isinstance(e, BackoffWaited) for e in planner) == 2
    starts = [e for e in planner if isinstance(e, InvocationStarted)]
    assert [(s.agent, s.attempt) for s in starts] == [("main", 1), ("main", 2), ("main", 3)]
    assert any(isinstance(e, PlanProduced) for e in events)


def test_an_agent_that_is_not_installed_falls_to_the_next_in_chain(tmp_path: Path) -> None:
    """A missing program is a non-retriable failure: no retry, the next agent takes over."""
    root = make_workspace(
        tmp_path / "ws",
        scripts={"s.toml": FINISH_EVERYTHING},
        agents={"ghost": ["ralph-test-no-such-agent"], "main": scripted("s.toml")},
        chains='default = ["ghost", "main"]',
    )
    result = run_here(root)
    assert result.state.phase is Phase.COMPLETE
    events = events_of(root, result)
    first = next(e for e in events if isinstance(e, InvocationFailed))
    assert (first.agent, first.error, first.retriable) == ("ghost", ErrorKind.NOT_FOUND, False)
    after = events[events.index(first) + 1]
    assert isinstance(after, InvocationStarted)
    assert after.agent == "main"


def test_a_hanging_agent_is_stopped_by_the_inactivity_timeout_with_its_group(
    tmp_path: Path,
) -> None:
    """The silent agent and the child it spawned are both gone; the chain falls back."""
    marker = f"ralph-hang-{uuid.uuid4().hex}"
    hang = f"""
[[planning]]
print = "working..."
spawn = ["{PYTHON}", "-c", "import time; time.sleep(300)", "{marker}"]
hang = true
"""
    root = make_workspace(
        tmp_path / "ws",
        scripts={"hang.toml": hang, "s.toml": FINISH_EVERYTHING},
        agents={"hanger": scripted("hang.toml"), "main": scripted("s.toml")},
        chains='default = ["main"]\nplanner = ["hanger", "main"]',
        budgets="max_retries_per_agent = 0",
        agent_options="timeout_s = 60\ninactivity_timeout_s = 1",
    )
    started = time.monotonic()
    result = run_here(root)
    assert result.state.phase is Phase.COMPLETE
    timed_out = [e for e in events_of(root, result) if isinstance(e, InvocationTimedOut)]
    assert [(t.agent, t.kind) for t in timed_out] == [("hanger", TimeoutKind.INACTIVITY)]
    assert 1_000 <= timed_out[0].after_ms < 20_000
    assert processes_with(marker) == [], "the hanging agent's child outlived it"
    assert time.monotonic() - started < 60


def test_a_rate_limit_is_recognised_from_a_plain_text_output(tmp_path: Path) -> None:
    """'429 Too Many Requests' in the output of a failed agent whose output has no structure
    (a command agent): a provider limit on requests, with no reset told, retried."""
    script = then_finish(
        "planning",
        '[[planning]]\nprint = "Error: 429 Too Many Requests (rate limit reached)"\nexit = 1\n',
    )
    root = make_workspace(
        tmp_path / "ws", scripts={"s.toml": script}, agents={"main": scripted("s.toml")}
    )
    result = run_here(root)
    limited = next(e for e in events_of(root, result) if isinstance(e, ProviderLimited))
    assert (limited.scope, limited.resets_at, limited.source) == (
        LimitScope.REQUESTS,
        None,
        "output text",
    )
    assert "429 Too Many Requests" in limited.message
    assert not [e for e in events_of(root, result) if isinstance(e, InvocationFailed)]
    assert result.state.phase is Phase.COMPLETE


def test_a_success_without_its_report_is_a_retriable_rejection(tmp_path: Path) -> None:
    """Exit 0 but no .agent/out/plan.md: rejected, naming the file, and retried."""
    script = then_finish("planning", '[[planning]]\nprint = "forgot the plan"\n')
    root = make_workspace(
        tmp_path / "ws", scripts={"s.toml": script}, agents={"main": scripted("s.toml")}
    )
    result = run_here(root)
    failed = next(e for e in events_of(root, result) if isinstance(e, InvocationFailed))
    assert failed.error is ErrorKind.OUTPUT_REJECTED
    assert failed.retriable
    assert ".agent/out/plan.md" in failed.message
    assert result.state.phase is Phase.COMPLETE


def test_the_whole_chain_failing_runs_dev_fix_and_stops_resumably(tmp_path: Path) -> None:
    """Every developer agent fails: the fixer diagnoses, the marker is written, the run is
    interrupted with agent_chain_exhausted (exit 1), with its checkpoint saved."""
    broken = '[[default]]\nprint = "segmentation fault"\nexit = 1\n'
    fixer = (
        '[[dev_fix]]\nwrite = { ".agent/out/status" = "failed\\nThe developer agent crashes." }\n'
    )
    root = make_workspace(
        tmp_path / "ws",
        scripts={"broken.toml": broken, "s.toml": FINISH_EVERYTHING, "fix.toml": fixer},
        agents={
            "broken": scripted("broken.toml"),
            "main": scripted("s.toml"),
            "fixer": scripted("fix.toml"),
        },
        chains='default = ["main"]\ndeveloper = ["broken"]\nfixer = ["fixer"]',
        budgets="max_retries_per_agent = 1\nbackoff_base_ms = 10\nbackoff_cap_ms = 20",
    )
    mode_before = (root / "PROMPT.md").stat().st_mode
    done = ralph("run", cwd=root)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "agent_chain_exhausted" in done.stdout
    marker = (root / ".agent" / "tmp" / "completion_marker").read_text()
    assert "status=dev_fix_failed" in marker
    assert "reason=agent chain exhausted for developer role" in marker
    assert "time=" in marker
    replayed = ralph("replay", "--verify", "--json", cwd=root)
    assert replayed.returncode == 0, replayed.stderr
    from pipeline.core.serialization import decode_state

    state = decode_state(replayed.stdout.splitlines()[0].encode())
    assert state.phase is Phase.INTERRUPTED
    assert state.termination is TerminationReason.AGENT_CHAIN_EXHAUSTED
    assert state.checkpoints.last_sequence == state.sequence - 1  # saved, then recorded
    assert state.checkpoints.due is None
    # The run is not over, so the prompt stays protected until it is resumed and finished.
    assert (root / "PROMPT.md").stat().st_mode & 0o222 == 0
    assert state.ledger.protected_prompt is not None
    assert state.ledger.protected_prompt.original_mode == mode_before & 0o7777


def test_the_prompt_file_is_read_only_during_the_run_and_restored_after(tmp_path: Path) -> None:
    """The agent finds PROMPT.md without write permission; afterwards its mode is back."""
    probe = [
        PYTHON,
        "-c",
        "import os, pathlib; os.makedirs('.agent/out', exist_ok=True); "
        "mode = os.stat('PROMPT.md').st_mode & 0o777; "
        "pathlib.Path('.agent/seen-mode').write_text(oct(mode)); "
        "[pathlib.Path('.agent/out', n).write_text(t) for n, t in "
        "[('plan.md', 'p'), ('status', 'completed'), ('issues.md', ''), "
        "('commit-message', 'm')]]",
    ]
    root = make_workspace(tmp_path / "ws", scripts={}, agents={"main": probe})
    (root / "PROMPT.md").chmod(0o640)
    result = run_here(root)
    assert result.state.phase is Phase.COMPLETE
    assert (root / ".agent" / "seen-mode").read_text() == oct(0o440)
    assert (root / "PROMPT.md").stat().st_mode & 0o777 == 0o640
    protected = [e for e in events_of(root, result) if isinstance(e, PromptFileProtected)]
    assert [p.original_mode for p in protected] == [0o640]
