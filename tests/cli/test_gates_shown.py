"""Gates shown to people. ``ralph report``: a lane with one bar per gate run coloured by its
outcome, and a Gates table, in HTML and Markdown; a gate's output (a command the agent may
have written) is shown as text, never markup; a run without gates shows none of it. ``ralph
run --plain`` and ``ralph events``: one line per gate start and report."""

from __future__ import annotations

import functools
import os
import re
from collections.abc import Sequence
from datetime import timedelta
from html import escape, unescape
from html.parser import HTMLParser
from pathlib import Path

import attrs
import pytest
from hypothesis import given
from hypothesis import strategies as st

from pipeline.app.cli._report import html_report, markdown_report
from pipeline.events import (
    GateAction,
    GateStatus,
    PipelineEvent,
)
from pipeline.reducers.views import GateOutcome, GateRun, gate_runs, timeline
from tests.chromium import CHROMIUM, dump_dom
from tests.runtime.test_gates import CHECK, gate_toml, gated_workspace
from tests.runtime.workspace import FINISH_EVERYTHING, make_workspace, ralph, scripted
from tests.support import budget, gate_spec, scripted_run

HOSTILE = (
    "import sys\n"
    "print('<script>document.body.dataset.ran=1</script>')\n"
    "print('<img src=x onerror=\"document.body.dataset.ran=2\"> [docs](javascript:alert(3))')\n"
    "sys.exit(1)\n"
)
"""A warning gate whose output is HTML and a Markdown link, as a hostile test may print."""


class _Page(HTMLParser):
    """The tags of a page, its gate bars and its gate table rows."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[str] = []
        self.gate_bars: list[dict[str, str]] = []
        self.gate_rows: list[str] = []
        self.lanes: list[str] = []
        self._in_gates = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = {k: v or "" for k, v in attrs}
        self.tags.append(tag)
        if "data-lane" in values:
            self.lanes.append(values["data-lane"])
        if tag == "div" and "gate-bar" in values.get("class", "").split():
            self.gate_bars.append(values)
        if tag == "table":
            self._in_gates = "gates" in values.get("class", "").split()
        if tag == "tr" and self._in_gates and "data-outcome" in values:
            self.gate_rows.append(values["data-outcome"])


def _page(html: str) -> _Page:
    parser = _Page()
    parser.feed(html)
    return parser


def _simulated_log(
    *statuses: GateStatus, on_failure: GateAction | None
) -> tuple[PipelineEvent, ...]:
    """A simulated run with one ``tests`` gate whose commands end ``statuses`` in turn (no
    gate when ``on_failure`` is None)."""
    gates = () if on_failure is None else (gate_spec(on_failure),)
    answers: dict[str, list[object]] = {"gate status": list(statuses)} if statuses else {}
    return tuple(scripted_run(answers, budget_=budget(max_iterations=4), gates=gates).events)


def _reports(
    log: Sequence[PipelineEvent], runs: Sequence[GateRun] | None = None
) -> tuple[str, str]:
    drawn = timeline(log)
    gates = gate_runs(log) if runs is None else runs
    return html_report(drawn, "t", gates), markdown_report(drawn, "t", gates)


def test_a_stopping_gate_is_a_stopped_bar_and_row() -> None:
    """A timed-out stopping gate: its bar and row say stopped, its status timed out, its
    action that the run ended."""
    html, markdown = _reports(_simulated_log(GateStatus.TIMED_OUT, on_failure=GateAction.STOP))
    page = _page(html)
    assert [bar["data-outcome"] for bar in page.gate_bars] == ["stopped"]
    assert page.gate_rows == ["stopped"]
    assert "gates" in page.lanes
    assert "| timed\\_out | stop (run ended) |" in markdown
    assert "1 gate run (1 stopped)" in markdown


@functools.cache
def _warned() -> tuple[PipelineEvent, ...]:
    """A simulated run whose one gate failed and warned (made once: examples share it)."""
    return _simulated_log(GateStatus.FAILED, on_failure=GateAction.WARN)


def _run() -> GateRun:
    """The warned gate run of :func:`_warned`."""
    (run,) = gate_runs(_warned())
    return run


def test_a_pinned_gate_says_its_base_and_the_files_it_did_not_take_from_the_agent() -> None:
    """A gate run pinned to the base: its bar's title, its table row and its Markdown line
    name the base and the files restored; an unpinned one says nothing of pinning."""
    base = _run()
    pinned = attrs.evolve(base, pinned="0123456789abcdef", restored=("tests/test_calc.py",))
    said = "pinned to 0123456789ab; the base's tests/test_calc.py"
    html, markdown = _reports(_warned(), [pinned])
    assert html.count(escape(said)) == 2  # the bar's title and the table's row
    text = unescape(markdown).replace("\\", "")
    assert f"[{said} (the agent's changes to them not used)]" in text
    plain_html, plain_markdown = _reports(_warned(), [base])
    assert "pinned to" not in plain_html
    assert "pinned to" not in plain_markdown


def test_a_cut_short_and_a_running_gate_are_drawn_and_said() -> None:
    """A gate the run stopped in is cut short (never reported, no action); one still at work
    is running, its bar drawn to the end of the log."""
    base = _run()
    cut = attrs.evolve(
        base,
        ended_at=base.started_at + timedelta(seconds=1),
        status=None,
        exit_code=None,
        duration_ms=None,
        log_path=None,
        tail="",
        action=None,
        outcome=GateOutcome.CUT_SHORT,
    )
    running = attrs.evolve(cut, number=2, ended_at=None, outcome=GateOutcome.RUNNING)
    html, markdown = _reports(_warned(), (cut, running))
    page = _page(html)
    assert [bar["data-outcome"] for bar in page.gate_bars] == ["cut_short", "running"]
    assert "| cut short (never reported) | - | - |" in markdown
    assert "| running | running | - | - |" in markdown


_PIECES = ("<", ">", "&", '"', "'", "=", "<b>", "</td>", "<script>", "<img src=x onerror=f()>")
_MORE = ("[", "]", "(", ")", "`", "|", "\\", "](javascript:f())", "\n", "\x1b", "\u202e")
_MARKUP = st.lists(st.sampled_from((*_PIECES, *_MORE)), min_size=1).map("".join)
"""Text made of the pieces of HTML, Markdown and control sequences."""
_TEXT = st.text(min_size=1) | _MARKUP


@given(text=_TEXT, name=_TEXT, log=_TEXT)
def test_no_gate_text_becomes_markup(text: str, name: str, log: str) -> None:
    """Whatever a gate's output, name and log path hold, the HTML page has the same tags as
    with plain text, and the Markdown holds no ``<`` of theirs and no link."""
    frame = _warned()
    benign_html, _ = _reports(frame, (_run(),))
    html, markdown = _reports(frame, (attrs.evolve(_run(), tail=text, gate=name, log_path=log),))
    assert _page(html).tags == _page(benign_html).tags
    gates = markdown.split("**Gates**", 1)[1].split("| by |", 1)[0]
    assert "<" not in gates
    assert re.search(r"(?<!\\)\]\(", gates) is None  # every ] of a link escaped


def test_a_run_without_gates_has_no_gates_lane_table_or_legend() -> None:
    """No gate run: the page and the Markdown are as before gates existed."""
    log = _simulated_log(on_failure=None)
    assert gate_runs(log) == ()
    html, markdown = _reports(log)
    page = _page(html)
    assert page.gate_bars == []
    assert page.gate_rows == []
    assert "gates" not in page.lanes
    assert "gate-bar" not in html
    assert "Gates" not in html
    assert "gate" not in markdown.lower()


# -- real runs ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def gated_plain(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """A finished run with a blocking gate that fails once then passes, and a warning gate
    that always fails printing HTML and a Markdown link; its workspace and what ``ralph run
    --plain`` printed."""
    gates = gate_toml("fixed", CHECK) + gate_toml("hostile", HOSTILE, "warn")
    root = gated_workspace(tmp_path_factory.mktemp("gated"), gates)
    result = ralph("run", "--plain", cwd=root)
    assert result.returncode == 0, result.stdout + result.stderr
    return root, result.stdout


@pytest.fixture
def gated_run(gated_plain: tuple[Path, str]) -> Path:
    """The gated run's workspace."""
    return gated_plain[0]


@pytest.mark.slow
def test_plain_lines_and_events_show_each_gate_start_and_report(
    gated_plain: tuple[Path, str],
) -> None:
    """``--plain`` prints a line per gate start and per report (status, exit, last line of
    output, log); ``ralph events`` prints the same lines from the store."""
    root, plain = gated_plain
    started = "validation.gate_started gate=fixed boundary=final"
    failed = (
        "validation.gate_finished gate=fixed boundary=final status=failed exit_code=1 duration="
    )
    told = "last_line=checking fixed.txt: MISSING: write fixed.txt log_path=.ralph/runs/"
    passed = "validation.gate_finished gate=fixed boundary=final status=passed exit_code=0"
    events = ralph("events", "--category", "validation", cwd=root)
    assert events.returncode == 0, events.stderr
    for output in (plain, events.stdout):
        lines = [line for line in output.splitlines() if "validation.gate_" in line]
        assert len(lines) == 8  # two rounds of two gates, a start and a report each
        assert started in lines[0]
        assert failed in lines[1]
        assert told in lines[1]
        assert passed in lines[5]
        assert all("\x1b" not in line and "argv=" not in line for line in lines)


@pytest.mark.slow
def test_the_html_report_of_a_gated_run_has_a_bar_and_a_row_per_gate_run(
    gated_run: Path, tmp_path: Path
) -> None:
    """Blocked, warned, then passed and warned again: each run a bar on the gates lane and
    a row, coloured by outcome; the gate's HTML is text on the page."""
    target = tmp_path / "report.html"
    result = ralph("report", "--html", str(target), cwd=gated_run)
    assert result.returncode == 0, result.stderr
    assert "4 gate runs" in result.stdout
    html = target.read_text()
    page = _page(html)
    expected = ["blocked", "warned", "passed", "warned"]
    assert [bar["data-outcome"] for bar in page.gate_bars] == expected
    assert [bar["data-gate"] for bar in page.gate_bars] == ["fixed", "hostile"] * 2
    assert page.gate_rows == expected
    assert "script" not in page.tags
    assert "img" not in page.tags
    assert "&lt;script&gt;document.body.dataset.ran=1&lt;/script&gt;" in html
    assert "failed, exit 1" in html
    assert "gate-fixed-" in html  # the log's path


@pytest.mark.slow
def test_the_markdown_report_of_a_gated_run_lists_each_gate_run(gated_run: Path) -> None:
    """``--markdown -``: a Gates table row per run with its status, exit, action and log,
    the gate's output as literal text."""
    result = ralph("report", "--markdown", "-", cwd=gated_run)
    assert result.returncode == 0, result.stderr
    section = result.stdout.split("**Gates**")[1].split("| by |")[0]
    rows = [line for line in section.splitlines() if line.startswith("| ")]
    numbered = [row for row in rows if row.split("|")[1].strip().isdigit()]
    assert len(numbered) == 4
    assert "| fixed | final | 1 |" in numbered[0]
    assert "| failed, exit 1 | block (work sent back) |" in numbered[0]
    assert "MISSING: write fixed.txt" in numbered[0]  # the last line of its output
    assert "| passed, exit 0 | - |" in numbered[2]
    assert "| fixed | final | 2 |" in numbered[2]
    assert all("| warn (developer told) |" in numbered[i] for i in (1, 3))
    assert "4 gate runs (1 passed, 1 blocked, 2 warned)" in result.stdout
    assert "<img" not in result.stdout
    assert "<script" not in result.stdout
    assert "\\[docs\\](javascript:alert(3))" in result.stdout


@pytest.mark.slow
def test_a_run_without_gates_reports_no_gates(tmp_path: Path) -> None:
    """A run of a workspace with no ``[[gates]]``: no gates lane, table or summary."""
    root = make_workspace(
        tmp_path / "ws", scripts={"s.toml": FINISH_EVERYTHING}, agents={"main": scripted("s.toml")}
    )
    assert ralph("run", "--quiet", cwd=root).returncode == 0
    target = tmp_path / "report.html"
    html_made = ralph("report", "--html", str(target), cwd=root)
    assert html_made.returncode == 0, html_made.stderr
    assert "gate run" not in html_made.stdout
    page = _page(target.read_text())
    assert (page.gate_bars, page.gate_rows, page.lanes) == ([], [], [])
    markdown = ralph("report", "--markdown", "-", cwd=root).stdout
    assert "Gates" not in markdown
    assert "gate run" not in markdown


@pytest.mark.slow
@pytest.mark.skipif(
    CHROMIUM is None and not os.environ.get("CI"),
    reason="no chromium here (.ci/run installs Debian's chromium)",
)
def test_chromium_shows_the_gate_bars_and_runs_nothing_of_the_gates(
    gated_run: Path, tmp_path: Path
) -> None:
    """The page as Chromium renders it: four gate bars on the lane, every one inside the
    track, and no handler of the gate's output ran."""
    assert CHROMIUM is not None, "CI must have chromium: .ci/run installs it"
    target = tmp_path / "report.html"
    assert ralph("report", "--html", str(target), cwd=gated_run).returncode == 0
    dumped = dump_dom(target)
    page = _page(dumped)
    assert len(page.gate_bars) == 4
    for bar in page.gate_bars:
        left, width = (float(part.split(":")[1].rstrip("%")) for part in bar["style"].split(";"))
        assert left >= 0
        assert left + width <= 100.001
    assert "data-ran" not in dumped
    assert "script" not in page.tags
