"""Escalation ladders in a real run: a scripted reviewer that finds issues twice moves the
developer up its ladder, the developer's next invocation runs the rung's model (its
``RALPH_MODEL``), and ``ralph status`` and ``ralph report`` show where it stands and why it
moved."""

from __future__ import annotations

from pathlib import Path

from pipeline.core.state import Phase
from pipeline.events import InvocationStarted, Role
from pipeline.handlers.runtime import WorkspaceLayout
from tests.runtime.workspace import (
    FINISH_EVERYTHING,
    events_of,
    make_workspace,
    ralph,
    run_here,
    scripted,
)

REVIEWS = """
[[review]]
write.".agent/out/issues.md" = "- the tests do not cover the empty input"
[[review]]
write.".agent/out/issues.md" = "- the empty input still fails"
[[review]]
write.".agent/out/issues.md" = ""
"""
"""A reviewer that finds issues in passes 1 and 2 and none in pass 3."""

DEVELOPER = """
mkdir -p .agent/out
printf '%s %s\\n' "$RALPH_PROMPT_KIND" "${RALPH_MODEL:-own}" >> .ralph/models
printf 'completed\\ndone' > .agent/out/status
echo "$RALPH_REVIEW_PASS" >> work.txt
"""
"""A developer that notes the model each of its invocations runs, and changes the tree."""

LADDER = """
[hats.developer]
escalate = ["m-strong", "m-best"]
escalate_after = { review_issues = 2, blocked = 0, validation_failed = 0 }
"""


def test_a_reviewer_that_finds_issues_twice_moves_the_developer_up(tmp_path: Path) -> None:
    root = make_workspace(
        tmp_path / "ws",
        scripts={"s.toml": REVIEWS + FINISH_EVERYTHING},
        agents={"main": scripted("s.toml"), "dev": ["sh", "-c", DEVELOPER]},
        chains='default = ["main"]\ndeveloper = ["dev"]',
        budgets="max_review_passes = 4\nmax_retries_per_agent = 1",
        extra=LADDER,
    )
    run = run_here(root)
    assert run.state.phase is Phase.COMPLETE
    models = (root / ".ralph" / "models").read_text().splitlines()
    # Pass 1's findings are the first bounce; pass 2's the second: the fix after it, and
    # every developer invocation after that, runs the next rung's model.
    assert models == ["development own", "review_fix own", "review_fix m-strong"]
    started = [
        e.model
        for e in events_of(root, run)
        if isinstance(e, InvocationStarted) and e.role is Role.DEVELOPER
    ]
    assert started == [None, None, "m-strong"]

    status = ralph("status", cwd=root)
    assert status.returncode == 0, status.stderr
    assert "escalation: developer" in status.stdout
    assert "rung 1 of 2 (m-strong)" in status.stdout

    report = ralph("report", "--markdown", "-", cwd=root)
    assert report.returncode == 0, report.stderr
    assert "#### Escalation" in report.stdout
    (move,) = [line for line in report.stdout.splitlines() if "review found issues" in line]
    assert "its own model | m-strong | review found issues 2 times" in move
    assert "dev (m-strong)" in report.stdout


def test_a_ladder_on_a_role_whose_work_does_not_bounce_is_refused(tmp_path: Path) -> None:
    root = make_workspace(
        tmp_path / "ws",
        scripts={"s.toml": FINISH_EVERYTHING},
        agents={"main": scripted("s.toml")},
        extra='[hats.reviewer]\nescalate = ["m-strong"]\n',
    )
    result = ralph("run", cwd=root)
    assert result.returncode == 2, result.stdout + result.stderr
    assert "hats.reviewer.escalate: only the developer's work bounces" in result.stderr
    assert not WorkspaceLayout(root=root).store.exists()
