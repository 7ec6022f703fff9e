"""A person's guidance (``ralph guide``) in real runs: given while the run goes on, it is
recorded as a ``GuidanceGiven`` fact before the next prompt is made and the chosen hat's next
prompt carries it, once; given to a stopped run, the resumed run takes it in; bad guidance is
refused with exit 2 and nothing kept."""

from __future__ import annotations

from pathlib import Path

import pytest

from pipeline.core.state import Phase
from pipeline.engine import GuidanceError, guide
from pipeline.events import DevelopmentIterationStarted, GuidanceGiven, RunId
from pipeline.handlers.runtime import WorkspaceLayout
from pipeline.handlers.store import MessageKind, SqliteEventStore
from tests.runtime.workspace import (
    FINISH_EVERYTHING,
    PYTHON,
    events_of,
    make_workspace,
    ralph,
    run_here,
    scripted,
)
from tests.support import scripted_run

SAVED = """
[[development]]
save_prompt = ".agent/developer-prompt"
write.".agent/out/status" = "completed\\ndone"
write."work.txt" = "done"
[[review]]
save_prompt = ".agent/reviewer-prompt"
write.".agent/out/issues.md" = ""
"""
"""The developer and the reviewer keep the prompts they got."""

GUIDING_PLANNER = f"""
set -e
mkdir -p .agent/out
printf '1. do it' > .agent/out/plan.md
{PYTHON} -m pipeline.app.cli guide 'Prefer the standard library; no new dependency.' --hat developer
{PYTHON} -m pipeline.app.cli guide 'Keep every function under twenty lines.'
"""
"""A planner during whose work a person guides the developer, then every hat."""


# Whole runs in subprocesses, seconds each, so slow: the fast loop has the decisions they make
# from tests/reducers/test_guidance.py (who takes guidance in, once) and the in-process refusal
# below.
@pytest.mark.slow
def test_guidance_given_while_the_run_goes_on_reaches_the_chosen_hats_next_prompt(
    tmp_path: Path,
) -> None:
    root = make_workspace(
        tmp_path / "ws",
        scripts={"s.toml": SAVED + FINISH_EVERYTHING},
        agents={"main": scripted("s.toml"), "planner": ["sh", "-c", GUIDING_PLANNER]},
        chains='default = ["main"]\nplanner = ["planner"]',
    )
    run = run_here(root)
    assert run.state.phase is Phase.COMPLETE
    developer = (root / ".agent" / "developer-prompt").read_text()
    reviewer = (root / ".agent" / "reviewer-prompt").read_text()
    assert "human.guidance" in developer
    assert "Prefer the standard library; no new dependency." in developer
    assert "Keep every function under twenty lines." in developer
    # The developer's guidance is not the reviewer's; guidance for every hat was delivered
    # with the developer's prompt, the next working prompt, and once.
    assert "Prefer the standard library" not in reviewer
    assert "Keep every function under twenty lines." not in reviewer
    given = [e for e in events_of(root, run) if isinstance(e, GuidanceGiven)]
    assert [(g.number, g.hat) for g in given] == [(1, "developer"), (2, None)]
    assert run.state.ledger.guidance_seen == 2
    assert run.state.ledger.anomalies == 0


INTERRUPTING_PLANNER = """
set -e
mkdir -p .agent/out
printf '1. do it' > .agent/out/plan.md
if [ ! -e .ralph/interrupted ]; then
    : > .ralph/interrupted
    # a person presses Ctrl-C while the planner works (ralph: the parent of the reaper
    # that runs each command)
    kill -INT "$(cut -d" " -f4 /proc/$PPID/stat)"
    sleep 5
fi
"""


@pytest.mark.slow
def test_guidance_to_a_stopped_run_is_taken_in_when_it_is_resumed(tmp_path: Path) -> None:
    """The run is interrupted while the planner works; guidance given then is kept, and the
    resumed run's developer prompt carries it."""
    root = make_workspace(
        tmp_path / "ws",
        scripts={"s.toml": SAVED + FINISH_EVERYTHING},
        agents={"main": scripted("s.toml"), "planner": ["sh", "-c", INTERRUPTING_PLANNER]},
        chains='default = ["main"]\nplanner = ["planner"]',
    )
    stopped = ralph("run", "--plain", cwd=root)
    assert stopped.returncode == 130, stopped.stdout + stopped.stderr
    given = ralph("guide", "Name the helper slugify.", "--hat", "developer", cwd=root)
    assert given.returncode == 0, given.stderr
    assert "Guidance 1 for run" in given.stdout
    resumed = ralph("resume", "--plain", cwd=root)
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert "Name the helper slugify." in (root / ".agent" / "developer-prompt").read_text()
    with SqliteEventStore(WorkspaceLayout(root=root).store) as store:
        (summary,) = store.runs()
        facts = [e for e in store.read(summary.run_id) if isinstance(e, GuidanceGiven)]
    assert [(g.number, g.hat, g.text) for g in facts] == [
        (1, "developer", "Name the helper slugify.")
    ]
    # A finished run takes no more guidance: refused, nothing kept.
    ended = ralph("guide", "too late", cwd=root)
    assert ended.returncode == 2
    assert "has ended (completed)" in ended.stderr
    with SqliteEventStore(WorkspaceLayout(root=root).store) as store:
        assert [g.number for g in store.inbox(MessageKind.GUIDANCE, summary.run_id)] == [1]


@pytest.mark.slow
def test_bad_guidance_is_refused_and_nothing_is_kept(tmp_path: Path) -> None:
    root = make_workspace(
        tmp_path / "ws",
        scripts={"s.toml": FINISH_EVERYTHING},
        agents={"main": scripted("s.toml")},
    )
    nothing = ralph("guide", "hello", cwd=root)
    assert nothing.returncode == 2
    assert "no runs in" in nothing.stderr
    done = ralph("run", cwd=root)
    assert done.returncode == 0, done.stderr
    for args, said in (
        (["   "], "the guidance is empty"),
        (["x" * 4001], "at most 4000 reach a prompt"),
        (["hi", "--run", "nobody"], "nobody"),
    ):
        refused = ralph("guide", *args, cwd=root)
        assert refused.returncode == 2, (args, refused.stderr)
        assert said in refused.stderr, (args, refused.stderr)


def test_guidance_for_a_planner_past_planning_is_refused(tmp_path: Path) -> None:
    """The planner works once: once the run is past planning, ``--hat planner`` would go to
    whoever works next, so it is refused and the developer or the next prompt named."""
    events = scripted_run().events
    begun = next(i for i, e in enumerate(events) if isinstance(e, DevelopmentIterationStarted))
    store = tmp_path / "s.db"
    with SqliteEventStore(store) as opened:
        opened.append(RunId("run-1"), 0, events[: begun + 1])
    with pytest.raises(GuidanceError, match="past planning"):
        guide(tmp_path, "plan better", "planner", "run-1", str(store))
    assert guide(tmp_path, "test first", "developer", "run-1", str(store)) == ("run-1", 1)
