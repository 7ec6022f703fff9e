"""Permanent failures are not retried: an agent refusing its configuration stops the run for a
person at once (no retries, no dev-fix), the same failure twice moves on along the chain, and
an agent that fails before any model request is not run again. Messages carry no colour codes
and name the log that holds the cause."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from pipeline.core.state import Phase, TerminationReason
from pipeline.events import (
    DevFixTriggered,
    ErrorKind,
    InvocationFailed,
    InvocationStarted,
    UsageReported,
)
from pipeline.handlers.runtime._failures import configuration_error, strip_ansi
from tests.runtime.workspace import events_of, make_workspace, run_here

PYTHON = sys.executable
ROOT_REFUSAL = (
    "\x1b[31m--dangerously-skip-permissions cannot be used with root/sudo privileges for "
    "security reasons\x1b[0m"
)


CLAUDE_FORMAT = 'output_format = "claude-stream-json"'


def _failing(text: str, code: int = 1) -> list[str]:
    """A command agent that prints ``text`` and exits ``code``."""
    return [PYTHON, "-c", f"import sys; print({text!r}); sys.exit({code})"]


def _started(events: list[object]) -> list[str]:
    return [e.agent for e in events if isinstance(e, InvocationStarted)]


def test_colour_codes_are_removed_and_known_refusals_are_named() -> None:
    """The refusals of the pinned CLIs are recognised; other failures are not."""
    assert strip_ansi(b"\x1b[1;31mred\x1b[0m \x1b]0;title\x07done") == b"red done"
    assert "IS_SANDBOX" in (configuration_error(strip_ansi(ROOT_REFUSAL.encode())) or "")
    assert "--skip-trust" in (
        configuration_error(b"Gemini CLI is not running in a trusted directory.") or ""
    )
    assert "--bogus" in (configuration_error(b"error: unexpected argument '--bogus' found") or "")
    assert "--x" in (configuration_error(b"aider: error: unrecognized arguments: --x") or "")
    assert configuration_error(b"Traceback: ValueError: boom") is None
    assert configuration_error(b"") is None


def test_claude_refusing_root_stops_the_run_once_with_the_fix(tmp_path: Path) -> None:
    """One invocation, no retry, no fallback loop, no dev-fix: the run stops for a person
    (exit 3), resumable, with the fix and the agent's log named and no colour codes."""
    root = make_workspace(tmp_path / "ws", scripts={}, agents={"main": _failing(ROOT_REFUSAL)})
    result = run_here(root)
    state = result.state
    events = events_of(root, result)
    assert _started(events) == ["main"]
    assert not any(isinstance(e, DevFixTriggered) for e in events)
    failure = next(e for e in events if isinstance(e, InvocationFailed))
    assert failure.error is ErrorKind.CONFIGURATION
    assert not failure.retriable
    assert "\x1b" not in failure.message
    assert "IS_SANDBOX" in failure.message
    assert ".ralph/" in failure.message
    assert state.phase is Phase.INTERRUPTED
    assert state.termination is TerminationReason.HUMAN_INTERVENTION_REQUIRED
    assert state.termination.exit_code == 3
    assert "ralph resume" in (state.ledger.last_error or "")


def test_the_same_failure_twice_in_a_row_moves_on_to_the_next_agent(tmp_path: Path) -> None:
    """With two retries allowed, an agent failing identically twice is not tried a third
    time: the next agent of the chain takes over."""
    root = make_workspace(
        tmp_path / "ws",
        scripts={},
        agents={"broken": _failing("always the same"), "other": _failing("other")},
        chains='default = ["broken", "other"]',
    )
    events = events_of(root, run_here(root))
    assert _started(events)[:3] == ["broken", "broken", "other"]


def test_an_agent_that_fails_before_any_model_request_is_not_run_again(tmp_path: Path) -> None:
    """An agent whose output format reports usage, exiting 1 having reported none, never
    reached its model: no retry; its usage fact says why nothing is known."""
    root = make_workspace(
        tmp_path / "ws",
        scripts={},
        agents={"quiet": _failing("no model today"), "other": _failing("other")},
        chains='default = ["quiet", "other"]',
        agent_options=f"timeout_s = 60\n{CLAUDE_FORMAT}",
    )
    events = events_of(root, run_here(root))
    assert _started(events)[:2] == ["quiet", "other"]
    failure = next(e for e in events if isinstance(e, InvocationFailed))
    assert not failure.retriable
    assert "before any model request" in failure.message
    usage = next(e for e in events if isinstance(e, UsageReported))
    assert "reported no usage" in usage.note
    assert json.dumps(usage.note)
