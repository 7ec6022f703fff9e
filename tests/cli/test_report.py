"""``ralph report``: the HTML timeline and the Markdown summary of finished runs, rendered
in headless Chromium to check what a reader sees."""

from __future__ import annotations

import itertools
import os
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

import attrs
import pytest

from pipeline.app.cli._report import html_report, markdown_report, spend_rows
from pipeline.engine.simulation import USAGE_CHOICE
from pipeline.events import CostSource, InvocationStarted, PipelineEvent, UsageReported
from pipeline.reducers.views import Outcome, timeline
from tests.chromium import CHROMIUM, dump_dom
from tests.runtime.workspace import (
    FINISH_EVERYTHING,
    make_workspace,
    ralph,
    run_here,
    scripted,
    stored_events,
)
from tests.support import scripted_run

pytestmark = pytest.mark.slow  # whole runs in subprocesses: seconds a test


class _Bars(HTMLParser):
    """The ``div.bar`` elements of a page, with their attributes."""

    def __init__(self) -> None:
        super().__init__()
        self.bars: list[dict[str, str]] = []
        self.external: list[str] = []
        self._lane = ""

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = {k: v or "" for k, v in attrs}
        if "data-phase" in values:
            self._lane = values["data-phase"]
        if tag == "div" and "bar" in values.get("class", "").split():
            self.bars.append({**values, "lane": self._lane})
        for name in ("src", "href"):
            if values.get(name):
                self.external.append(values[name])


def _bars(html: str) -> _Bars:
    parser = _Bars()
    parser.feed(html)
    return parser


@pytest.fixture(scope="module")
def failover_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A finished run whose preferred agent always fails, so every task falls over to the
    scripted agent after its retries."""
    root = make_workspace(
        tmp_path_factory.mktemp("failover") / "ws",
        scripts={"s.toml": FINISH_EVERYTHING},
        agents={
            "broken": [sys.executable, "-c", "raise SystemExit(3)"],
            "main": scripted("s.toml"),
        },
        chains='default = ["broken", "main"]',
        budgets="max_retries_per_agent = 1\nbackoff_base_ms = 1\nbackoff_cap_ms = 2",
    )
    run_here(root)
    return root


def _invocations(log: list[PipelineEvent]) -> int:
    return sum(isinstance(e, InvocationStarted) for e in log)


def test_the_html_report_has_one_bar_per_invocation_and_fetches_nothing(
    failover_run: Path, tmp_path: Path
) -> None:
    """One bar per invocation, placed on its phase's lane, coloured by outcome, fallbacks and
    retries marked; no external resource."""
    page = tmp_path / "report.html"
    result = ralph("report", "--html", str(page), cwd=failover_run)
    assert result.returncode == 0, result.stderr
    log = stored_events(failover_run)
    parsed = _bars(page.read_text())
    assert len(parsed.bars) == _invocations(log) > 0
    assert parsed.external == []
    drawn = timeline(log)
    by_number = {int(b["data-number"]): b for b in parsed.bars}
    for bar in drawn.bars:
        shown = by_number[bar.number]
        classes = shown["class"].split()
        assert shown["data-outcome"] == bar.outcome.value
        assert shown["data-agent"] == bar.agent
        assert bar.outcome.value in classes
        assert ("fallback" in classes) == bar.is_fallback
        assert ("retry" in classes) == bar.is_retry
    assert any(bar.is_fallback for bar in drawn.bars)
    assert any(bar.is_retry for bar in drawn.bars)
    assert {bar.outcome for bar in drawn.bars} == {Outcome.FAILED, Outcome.SUCCEEDED}


def test_the_markdown_report_lists_every_invocation_and_the_final_state(
    failover_run: Path,
) -> None:
    """``--markdown -`` prints a table row per invocation and the final state."""
    result = ralph("report", "--markdown", "-", cwd=failover_run)
    assert result.returncode == 0, result.stderr
    rows = [line for line in result.stdout.splitlines() if line.startswith("| ") and "|" in line]
    numbered = [row for row in rows if row.split("|")[1].strip().isdigit()]
    assert len(numbered) == _invocations(stored_events(failover_run))
    assert "**completed**" in result.stdout
    assert any("fallback" in row and "broken" not in row for row in numbered)
    assert "| termination | completed |" in result.stdout


def test_report_without_a_destination_or_run_is_a_usage_error(
    failover_run: Path, tmp_path: Path
) -> None:
    """No --html/--markdown, an unknown run, or an unwritable file: exit 2, one line."""
    nothing = ralph("report", cwd=failover_run)
    assert nothing.returncode == 2
    assert "--html FILE and/or --markdown FILE" in nothing.stderr
    unknown = ralph("report", "--run", "nope", "--markdown", "-", cwd=failover_run)
    assert unknown.returncode == 2
    assert "no run 'nope'" in unknown.stderr
    unwritable = ralph("report", "--html", str(tmp_path / "no" / "dir.html"), cwd=failover_run)
    assert unwritable.returncode == 2
    assert "cannot write" in unwritable.stderr


@pytest.mark.skipif(
    CHROMIUM is None and not os.environ.get("CI"),
    reason="no chromium here (.ci/run installs Debian's chromium)",
)
@pytest.mark.parametrize("run", ["demo", "failover"])
def test_headless_chromium_renders_one_visible_bar_per_invocation(
    run: str, failover_run: Path, tmp_path: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """The page as Chromium renders it: the DOM it dumps holds one bar per invocation, each
    on the timeline; a screenshot is saved next to the report."""
    assert CHROMIUM is not None, "CI must have chromium: .ci/run installs it"
    if run == "demo":
        base = tmp_path_factory.mktemp("demo")
        made = ralph("demo", "d", "--quiet", cwd=base)
        assert made.returncode == 0, made.stderr
        root = base / "d"
    else:
        root = failover_run
    page = tmp_path / "report.html"
    assert ralph("report", "--html", str(page), cwd=root).returncode == 0
    dumped = dump_dom(page)
    rendered = _bars(dumped)
    assert len(rendered.bars) == _invocations(stored_events(root))
    lanes: dict[str, list[tuple[float, float]]] = {}
    for b in rendered.bars:
        left, width = (float(part.split(":")[1].rstrip("%")) for part in b["style"].split(";"))
        assert width > 0
        assert left >= 0
        assert left + width <= 100.001
        lanes.setdefault(b["lane"], []).append((left, left + width))
    for spans in lanes.values():  # no bar hides another
        spans.sort()
        assert all(a[1] <= b[0] + 1e-6 for a, b in itertools.pairwise(spans))
    shot = tmp_path / f"report-{run}.png"
    taken = subprocess.run(
        [
            CHROMIUM,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            f"--screenshot={shot}",
            "--window-size=1400,900",
            page.as_uri(),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert taken.returncode == 0, taken.stderr
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def _priced_log() -> list[PipelineEvent]:
    """A simulated run whose first invocation cost $0.50 (2,200 tokens), second reported no
    usage, third reported tokens of unknown cost, the rest nothing."""
    result = scripted_run({USAGE_CHOICE: [2, 0, 1]})
    log: list[PipelineEvent] = list(result.events)
    usages = [i for i, e in enumerate(log) if isinstance(e, UsageReported)]
    assert len(usages) == 2
    third = log[usages[1]]
    assert isinstance(third, UsageReported)
    log[usages[1]] = attrs.evolve(
        third, cost_usd=None, cost_source=CostSource.UNKNOWN, note="no price for simulated"
    )
    return log


def test_the_report_shows_each_invocations_usage_and_the_cost_per_role_and_iteration() -> None:
    """Each bar's tooltip and data attributes give its tokens and cost; the cost table sums
    per role and per iteration; an unknown cost is named, never counted as $0."""
    drawn = timeline(_priced_log())
    page = html_report(drawn, "priced")
    parsed = _bars(page)
    by_number = {int(bar["data-number"]): bar for bar in parsed.bars}
    first, second, third = by_number[1], by_number[2], by_number[3]
    assert (first["data-tokens"], first["data-cost"]) == ("2,200", "$0.5000")
    assert "simulated: 2,200 tokens, $0.5000 (reported)" in first["title"]
    assert (second["data-tokens"], second["data-cost"]) == ("-", "-")
    assert "no usage reported" in second["title"]
    assert (third["data-tokens"], third["data-cost"]) == ("1,100", "unknown")
    assert "cost unknown (no price for simulated)" in third["title"]
    rows = spend_rows(drawn)
    roles = {name: cost for by, name, cost, _tokens in rows if by == "role"}
    assert roles[drawn.bars[0].role.value] == "$0.5000"
    assert roles[drawn.bars[2].role.value] == "unknown"
    assert ("run", "total", "$0.5000 + 1 of unknown cost", "3,300") in rows
    iterations = [name for by, name, _cost, _tokens in rows if by == "iteration"]
    assert iterations == list(dict.fromkeys(iterations))
    assert "iteration 1" in iterations
    assert '<table class="spend">' in page
    assert "$0.5000 + 1 of unknown cost, 3,300 tokens" in page
    markdown = markdown_report(drawn, "priced")
    assert "spent $0.5000 + 1 of unknown cost, 3,300 tokens." in markdown
    assert "| run | total | $0.5000 + 1 of unknown cost | 3,300 |" in markdown
    assert "$0.0000" not in page + markdown


def test_a_run_of_agents_that_report_no_cost_shows_it_as_unknown(failover_run: Path) -> None:
    """Command agents have no output format to read usage from: the report says unknown."""
    result = ralph("report", "--markdown", "-", cwd=failover_run)
    assert result.returncode == 0, result.stderr
    assert "| run | total | unknown | 0 |" in result.stdout
    assert "$0" not in result.stdout


def test_every_invocation_outcome_has_its_colour_in_the_pages_style() -> None:
    """The timeline's style colours a bar of each outcome (a limited one was left without a
    background, white text on white), from the same table as the legend."""
    page = html_report(timeline(()), "Run r")
    for outcome in Outcome:
        assert f".bar.{outcome.value} {{ background: " in page, outcome
