"""Screens shown to people. ``ralph report``: a mark per screen on the gates lane, coloured by
what it did, and a Screen table of every hit with its action, in HTML and Markdown; a hit's
path and detail (the agent's own text) are shown as text, never markup; a run that never
screened shows none of it. ``ralph status``: a ``screen`` row. ``--plain`` and ``ralph
events``: one line per screen and per base recorded. The live panel: the screen at work."""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path

import attrs
import pytest
from hypothesis import given
from hypothesis import strategies as st

from pipeline.app.cli._progress import LiveView
from pipeline.app.cli._render import describe_event, state_rows
from pipeline.app.cli._report import html_report, markdown_report
from pipeline.core.state import PipelineState
from pipeline.engine.simulation import simulated_policy
from pipeline.events import (
    ChangesScreened,
    Count,
    GateAction,
    Instant,
    LoopPolicy,
    PipelineEvent,
    ScreenBaseRecorded,
    ScreenHit,
    ScreenKind,
    ScreenScope,
    TamperPolicy,
)
from pipeline.reducers import fold, reduce
from pipeline.reducers.views import ScreenRun, gate_runs, screen_runs, screens_text, timeline
from tests.cli.test_gates_shown import _MARKUP, _Page
from tests.cli.test_progress import _panel
from tests.reducers.test_gates import gate
from tests.reducers.test_screen_round import (
    A_TAMPER_HIT,
    NOTHING_FOUND,
    TAMPER,
    run_screened,
)
from tests.runtime.test_screen import FIXED, OTHER, TESTS, cheating_workspace
from tests.runtime.workspace import ralph

AT = Instant(datetime(2026, 1, 1, tzinfo=UTC))


class _ScreenPage(_Page):
    """The tags of a page, its gate bars, its screen marks and its Screen table's rows."""

    def __init__(self) -> None:
        super().__init__()
        self.marks: list[dict[str, str]] = []
        self.screen_rows: list[tuple[str, str]] = []
        self._in_screens = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        super().handle_starttag(tag, attrs)
        values = {k: v or "" for k, v in attrs}
        if tag == "div" and "screen-mark" in values.get("class", "").split():
            self.marks.append(values)
        if tag == "table":
            self._in_screens = "screens" in values.get("class", "").split()
        if tag == "tr" and self._in_screens and "data-screen" in values:
            self.screen_rows.append((values["data-screen"], values["data-action"]))


def _page(html: str) -> _ScreenPage:
    parser = _ScreenPage()
    parser.feed(html)
    return parser


def _reports(
    log: Sequence[PipelineEvent], screens: Sequence[ScreenRun] | None = None
) -> tuple[str, str]:
    drawn, gates = timeline(log), gate_runs(log)
    shown = screen_runs(log) if screens is None else screens
    return html_report(drawn, "t", gates, shown), markdown_report(drawn, "t", gates, shown)


@functools.cache
def _blocked_then_clean() -> tuple[PipelineEvent, ...]:
    """A simulated run with a ``tests`` gate whose first screen finds a test removed (it
    blocks) and whose second is clean (made once: examples share it)."""
    return run_screened(attrs.evolve(TAMPER, gates=(gate("tests"),)), [A_TAMPER_HIT, NOTHING_FOUND])


def _two_screens() -> tuple[ScreenRun, ScreenRun]:
    """The first screen of :func:`_blocked_then_clean` (it blocked) and its last (clean), as
    screens 1 and 2 of the run's scope (how many screens a run has between them depends on
    the boundaries it screens at)."""
    first, *_, last = screen_runs(_blocked_then_clean())
    return (
        attrs.evolve(first, scope=ScreenScope.RUN),
        attrs.evolve(last, number=2, scope=ScreenScope.RUN),
    )


def _markdown_rows(markdown: str) -> list[str]:
    section = markdown.split("**Screen**", 1)[1].split("**Gates**", 1)[0].split("| by |")[0]
    return [line for line in section.splitlines() if line[2:3].isdigit()]


def test_a_blocked_then_a_clean_screen_are_marks_on_the_gates_lane_and_rows_of_the_table() -> None:
    """Each screen a mark before its round's gate bar, coloured blocked then clean; each hit
    a row with its kind, place, detail and action; a clean screen one row saying so."""
    html, markdown = _reports(_blocked_then_clean(), _two_screens())
    page = _page(html)
    assert [mark["data-outcome"] for mark in page.marks] == ["blocked", "clean"]
    assert page.gate_bars
    track = html.split('data-lane="gates"', 1)[1]
    assert track.index('data-outcome="blocked"') < track.index("gate-bar")
    assert page.screen_rows == [("1", "block"), ("2", "clean")]
    assert "screen blocked" in html  # the legend
    first, second = _markdown_rows(markdown)
    assert "| run | empty tree | 3 | test\\_removed | tests/test\\_app.py | 1 test fewer |" in first
    assert first.endswith("| block (work sent back) |")
    assert second.endswith("| clean | - | - | - |")
    assert "2 screens, 1 hit (1 clean, 1 blocked)" in markdown


def test_a_screen_that_stopped_the_run_is_drawn_alone_on_the_lane() -> None:
    """No gate ran after a stopping screen: the lane holds its stopped mark and no bar."""
    loop = attrs.evolve(
        simulated_policy(), tamper=TamperPolicy(on_hit=GateAction.STOP), gates=(gate("tests"),)
    )
    html, markdown = _reports(run_screened(loop, [A_TAMPER_HIT]))
    page = _page(html)
    assert [mark["data-outcome"] for mark in page.marks] == ["stopped"]
    assert page.gate_bars == []
    assert "gates" in page.lanes
    (row,) = _markdown_rows(markdown)
    assert row.endswith("| stop (run ended) |")


def _hostile(path: str, detail: str) -> ScreenRun:
    screen, _clean = _two_screens()
    (judged,) = screen.hits
    hit = attrs.evolve(judged.hit, path=path, detail=detail, line=Count(7))
    return attrs.evolve(screen, hits=(attrs.evolve(judged, hit=hit),))


@given(path=st.text(min_size=1) | _MARKUP, detail=st.text(min_size=1) | _MARKUP)
def test_no_hit_text_becomes_markup(path: str, detail: str) -> None:
    """Whatever a hit's path and detail hold, the HTML page has the same tags as with plain
    text, and the Markdown's Screen table holds no ``<`` of theirs and no link."""
    log = _blocked_then_clean()
    benign, _ = _reports(log, (_hostile("a.py", "plain"),))
    html, markdown = _reports(log, (_hostile(path, detail),))
    assert _page(html).tags == _page(benign).tags
    section = markdown.split("**Screen**", 1)[1].split("**Gates**", 1)[0]
    assert "<" not in section
    assert re.search(r"(?<!\\)\]\(", section) is None  # every ] of a link escaped


def test_a_run_that_never_screened_shows_no_screen() -> None:
    """No ``[tamper]`` nor ``[postconditions]``: no mark, table, legend or summary."""
    log = run_screened(attrs.evolve(simulated_policy(), gates=(gate("tests"),)), ())
    assert screen_runs(log) == ()
    html, markdown = _reports(log)
    assert "screen-mark" not in html
    assert 'id="screens"' not in html
    assert "screen" not in markdown.lower()
    assert "screen" not in dict(state_rows(fold(log), ()))


def _screened(*hits: ScreenHit, base: str | None = "c0ffee" * 7) -> ChangesScreened:
    return ChangesScreened(scope=ScreenScope.RUN, base=base, files=Count(12), hits=hits, at=AT)


def test_a_screen_is_one_plain_line_naming_its_first_hits() -> None:
    """Kind and place of the first three hits (the details are in the log), the rest
    counted; a clean screen says so with its files; a base is its first characters."""
    hits = [
        ScreenHit(
            kind=ScreenKind.TEST_FILE_DELETED,
            path="tests/test_calc.py",
            line=Count(0),
            detail="deleted",
        ),
        ScreenHit(
            kind=ScreenKind.SKIP_ADDED,
            path="tests/test_x.py",
            line=Count(9),
            detail="@pytest.mark.skip",
        ),
        ScreenHit(kind=ScreenKind.TODO_ADDED, path="a.py", line=Count(1), detail="# TODO"),
        ScreenHit(kind=ScreenKind.TODO_ADDED, path="b.py", line=Count(2), detail="# TODO"),
    ]
    assert describe_event(_screened(*hits[:2])) == (
        "validation.changes_screened scope=run base=c0ffeec0ffee files=12 hits=2 "
        "(test_file_deleted tests/test_calc.py; skip_added tests/test_x.py:9)"
    )
    assert describe_event(_screened(*hits)).endswith(
        "hits=4 (test_file_deleted tests/test_calc.py; skip_added tests/test_x.py:9; "
        "todo_added a.py:1; and 1 more)"
    )
    assert describe_event(_screened(base=None)) == (
        "validation.changes_screened scope=run base=empty-tree files=12 hits=0 (clean)"
    )
    assert describe_event(ScreenBaseRecorded(sha="ab" * 20, at=AT)) == (
        "validation.screen_base_recorded sha=abababababab"
    )
    assert describe_event(ScreenBaseRecorded(sha=None, at=AT)).endswith("sha=empty-tree")


def test_a_hostile_path_in_a_plain_line_is_escaped() -> None:
    hit = ScreenHit(
        kind=ScreenKind.SKIP_ADDED, path="t\x1b]0;owned\x07.py", line=Count(1), detail="x"
    )
    line = describe_event(_screened(hit))
    assert "\x1b" not in line
    assert "\\x1b]0;owned\\x07.py:1" in line


def test_the_screen_row_counts_screens_and_names_hits_once() -> None:
    """``ralph status``'s row: the screens, the hits (each kind and place once, the first
    three named) and what the last screen did; clean, or none yet."""
    blocked, clean = _two_screens()
    assert screens_text(()) == "none yet"
    assert screens_text((clean,)) == "1 screen, clean"
    assert screens_text((blocked, clean)) == (
        "2 screens, 1 hit: test_removed tests/test_app.py; the last screen clean"
    )
    assert screens_text((blocked, blocked)) == (
        "2 screens, 2 hits: test_removed tests/test_app.py; the last screen blocked the run"
    )
    rows = dict(state_rows(fold(_blocked_then_clean()), (blocked, clean)))
    assert rows["screen"].startswith("2 screens, 1 hit")
    assert "screen" not in dict(state_rows(fold(_blocked_then_clean())))  # not read: no row


def _loop_of(state: PipelineState) -> LoopPolicy:
    assert state.run is not None
    return state.run.loop


def test_the_live_panel_shows_the_screen_at_work_and_for_how_long() -> None:
    """From the fact that opens the round until the screen reports, "at work" says the task's
    changes are being screened (``ralph status``'s "active" too), for as long as this view
    has seen it; its report ends it."""
    log = _blocked_then_clean()
    now = [0.0]
    view = LiveView(clock=lambda: now[0])
    state = PipelineState()
    screened = next(i for i, e in enumerate(log) if isinstance(e, ChangesScreened))
    for event in log[:screened]:
        state = reduce(state, event)
        view.record(state, event)
    assert _loop_of(state).screens
    now[0] = 3.0
    text = _panel(view)
    # The first screen is the developer task's, before its work is committed.
    assert "at work    screening the task's changes, since 0m03s" in text
    assert dict(state_rows(state))["active"] == "screening the task's changes"
    state = reduce(state, log[screened])
    view.record(state, log[screened])
    assert "screening" not in _panel(view)


# -- a real run ---------------------------------------------------------------------------

REASON = "<script>document.body.dataset.ran=1</script> [docs](javascript:alert(3))"
"""A skip marker's reason as a hostile agent writes it: HTML and a Markdown link."""


@pytest.fixture(scope="module")
def cheated(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """A finished run whose agent first deletes tests/test_other.py and skips test_div with
    :data:`REASON` (pytest passes: the screen blocks), then, told, puts both back and fixes
    the code (a clean screen: completed); its workspace and what ``ralph run --plain``
    printed."""
    tmp = tmp_path_factory.mktemp("cheated")
    (tmp / "test_calc.py").write_text(TESTS)  # outside the repository
    (tmp / "test_other.py").write_text(OTHER)
    body = (
        'if grep -q "skip_added" ".ralph/prompt-$n.md"; then\n'
        f"  cp {tmp / 'test_calc.py'} {tmp / 'test_other.py'} tests/\n"
        f"  printf '{FIXED.encode('unicode_escape').decode()}' > calc.py\n"
        "  touch .ralph/put-back\n"
        "elif [ ! -e .ralph/put-back ]; then\n"
        "  rm -f tests/test_other.py\n"
        "  if ! grep -q 'mark.skip' tests/test_calc.py; then\n"
        f"    sed -i 's|^def test_div|@pytest.mark.skip(reason=\"{REASON}\")\\ndef test_div|' "
        "tests/test_calc.py\n"
        "    sed -i '1i import pytest' tests/test_calc.py\n"
        "  fi\n"
        "fi\n"
    )
    root = cheating_workspace(tmp, body)
    result = ralph("run", "--plain", cwd=root, timeout=240)
    assert result.returncode == 0, result.stdout + result.stderr
    return root, result.stdout


@pytest.mark.slow
def test_the_html_report_of_a_cheating_run_marks_each_screen_and_lists_each_hit(
    cheated: tuple[Path, str], tmp_path: Path
) -> None:
    """The first screen's mark blocked, the last one's clean; a row per hit, the skip line's
    HTML as text. (How many screens come between depends on the boundaries the run screens
    at.)"""
    root, _plain = cheated
    target = tmp_path / "report.html"
    result = ralph("report", "--html", str(target), cwd=root)
    assert result.returncode == 0, result.stderr
    assert re.search(r"gate runs?, \d+ screens\)", result.stdout), result.stdout
    html = target.read_text()
    page = _page(html)
    outcomes = [mark["data-outcome"] for mark in page.marks]
    assert (outcomes[0], outcomes[-1]) == ("blocked", "clean")
    assert set(outcomes) == {"blocked", "clean"}
    assert page.screen_rows[:2] == [("1", "block"), ("1", "block")]
    assert page.screen_rows[-1] == (str(len(outcomes)), "clean")
    assert "script" not in page.tags
    assert "&lt;script&gt;document.body.dataset.ran=1&lt;/script&gt;" in html
    assert "<td>tests/test_calc.py:9</td>" in html
    assert "<td>test_file_deleted</td><td>tests/test_other.py</td>" in html


@pytest.mark.slow
def test_the_markdown_report_of_a_cheating_run_lists_each_hit_as_text(
    cheated: tuple[Path, str],
) -> None:
    root, _plain = cheated
    result = ralph("report", "--markdown", "-", cwd=root)
    assert result.returncode == 0, result.stderr
    deleted, skipped, *_, clean = _markdown_rows(result.stdout)
    assert "| test\\_file\\_deleted | tests/test\\_other.py | deleted (tests gone: " in deleted
    assert "| skip\\_added | tests/test\\_calc.py:9 | @pytest.mark.skip(" in skipped
    assert "\\[docs\\](javascript:alert(3))" in skipped
    assert all(row.endswith("| block (work sent back) |") for row in (deleted, skipped))
    assert clean.endswith("| clean | - | - | - |")
    assert "<script" not in result.stdout
    # The two hits of the text, and the two tests pytest no longer runs (the collection).
    assert re.search(r"\d+ screens, 4 hits \(\d+ clean, 1 blocked\)", result.stdout)


@pytest.mark.slow
def test_status_has_a_screen_row(cheated: tuple[Path, str]) -> None:
    root, _plain = cheated
    result = ralph("status", cwd=root)
    assert result.returncode == 0, result.stderr
    (row,) = [line for line in result.stdout.splitlines() if "│ screen " in line]
    assert re.search(
        r"\d+ screens, 4 hits: test_file_deleted tests/test_other.py, skip_added "
        r"tests/test_calc.py:9, test_lost tests/test_calc.py",
        row,
    ), row


@pytest.mark.slow
def test_plain_lines_and_events_show_each_screen_and_its_base(cheated: tuple[Path, str]) -> None:
    """``--plain`` and ``ralph events`` print the base once and each screen on a line: the
    first with its hits, the last clean."""
    root, plain = cheated
    events = ralph("events", "--category", "validation", cwd=root)
    assert events.returncode == 0, events.stderr
    for output in (plain, events.stdout):
        tags = ("validation.screen_base_recorded", "validation.changes_screened")
        lines = [line for line in output.splitlines() if any(tag in line for tag in tags)]
        base, first, *_, last = lines
        assert "validation.screen_base_recorded sha=" in base
        assert (
            "hits=4 (test_file_deleted tests/test_other.py; skip_added tests/test_calc.py:9; "
            "test_lost tests/test_calc.py; and 1 more)" in (first)
        )
        assert "hits=0 (clean)" in last
