"""The sandbox shown to people. ``ralph report``: a Sandbox section (on or off and why, the
endpoints agents may reach, the variables withheld by name, and a table of the connections
refused), every text escaped (an endpoint is an agent's own request text); a run whose log
says nothing of the sandbox is reported as before. ``ralph status``: ``sandbox`` and
``refused connections`` rows. The live panel: refused connections under "trouble".
``--plain`` and ``ralph events``: one line per refusal."""

from __future__ import annotations

import functools
import os
import re
import subprocess
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pipeline.app.cli._progress import LiveView
from pipeline.app.cli._render import describe_event, state_rows
from pipeline.app.cli._report import html_report, markdown_report
from pipeline.core.state import PipelineState
from pipeline.events import (
    AgentName,
    ConnectionRefused,
    Count,
    Instant,
    PipelineEvent,
    Role,
    RunId,
    RunStarted,
    SandboxChecked,
    SandboxMode,
)
from pipeline.handlers.store import SqliteEventStore
from pipeline.reducers import fold, reduce
from pipeline.reducers.views import gate_runs, sandbox_view, screen_runs, timeline
from tests.chromium import CHROMIUM, dump_dom
from tests.cli.test_gates_shown import _MARKUP, _Page
from tests.cli.test_progress import _panel
from tests.runtime.test_sandbox import _bin_without_bwrap, _environment, hostile_workspace
from tests.runtime.workspace import RALPH, ralph
from tests.support import scripted_run
from tests.views.test_sandbox import OFF, ON, _inserted

AT = Instant(datetime(2026, 11, 1, tzinfo=UTC))
HOSTILE = "<script>document.body.dataset.ran=1</script>:443 [x](javascript:alert(3))"
"""An endpoint as a hostile agent may ask for it: HTML and a Markdown link."""


def _refused(endpoint: str, count: int, role: Role = Role.DEVELOPER) -> ConnectionRefused:
    return ConnectionRefused(
        role=role, agent=AgentName("claude"), endpoint=endpoint, count=Count(count), at=AT
    )


@functools.cache
def _plain_run() -> tuple[PipelineEvent, ...]:
    """A simulated run that completes, its sandbox not recorded (made once)."""
    return tuple(scripted_run().events)


def _sandboxed(
    *refusals: ConnectionRefused, check: SandboxChecked = ON
) -> tuple[PipelineEvent, ...]:
    """:func:`_plain_run` with ``check`` after its start and ``refusals`` after its first
    invocation."""
    return _inserted(_plain_run(), {0: [check], 1: list(refusals)})


def _reports(log: Sequence[PipelineEvent], *, sandbox: bool = True) -> tuple[str, str]:
    drawn, gates, screens = timeline(log), gate_runs(log), screen_runs(log)
    view = sandbox_view(log) if sandbox else None
    return (
        html_report(drawn, "t", gates, screens, view),
        markdown_report(drawn, "t", gates, screens, view),
    )


class _SandboxPage(_Page):
    """The tags of a page, its sandbox checks' rows and its refused connections' rows."""

    def __init__(self) -> None:
        super().__init__()
        self.checks: list[str] = []
        self.refused: list[tuple[str, str]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        super().handle_starttag(tag, attrs)
        values = {k: v or "" for k, v in attrs}
        if tag == "tr" and "data-on" in values:
            self.checks.append(values["data-on"])
        if tag == "tr" and "data-endpoint" in values:
            self.refused.append((values["data-endpoint"], values["data-count"]))


def _page(html: str) -> _SandboxPage:
    parser = _SandboxPage()
    parser.feed(html)
    return parser


def _section(markdown: str) -> str:
    return markdown.split("**Sandbox**", 1)[1].split("| by |", 1)[0]


def test_a_run_that_recorded_no_sandbox_is_reported_as_before() -> None:
    """No ``SandboxChecked`` (the sandbox off in ``ralph.toml``, or an older run): the HTML
    and Markdown are byte for byte the reports made without the sandbox, and no status row."""
    log = _plain_run()
    assert _reports(log) == _reports(log, sandbox=False)
    html, markdown = _reports(log)
    assert "sandbox" not in html.lower()
    assert "sandbox" not in markdown.lower()
    rows = dict(state_rows(fold(log), None, sandbox_view(log)))
    assert "sandbox" not in rows
    assert "refused connections" not in rows


def test_the_sandbox_section_says_on_its_endpoints_withheld_names_and_refusals() -> None:
    """On: the check's words, the endpoint, the withheld names; the refusals per endpoint
    and role, with their count and the invocation they came from; the summary counts them."""
    log = _sandboxed(
        _refused("chatgpt.com:443", 3),
        _refused("example.org:443", 1),
        _refused("chatgpt.com:443", 2, Role.REVIEWER),
    )
    html, markdown = _reports(log)
    page = _page(html)
    assert page.checks == ["true"]
    assert page.refused == [
        ("chatgpt.com:443", "3"),
        ("example.org:443", "1"),
        ("chatgpt.com:443", "2"),
    ]
    assert "<caption>Sandbox</caption>" in html
    assert "<caption>Refused connections</caption>" in html
    assert '<td class="said">on (bubblewrap 0.8.0; network: 127.0.0.1:33415)</td>' in html
    assert "<td>AWS_SECRET_ACCESS_KEY, GITHUB_TOKEN</td>" in html
    assert "<td>chatgpt.com:443</td><td>claude</td><td>developer</td><td>3</td><td>#1</td>" in html
    assert "sandbox on, 6 refused connections" in html
    section = _section(markdown)
    assert "| auto | on (bubblewrap 0.8.0; network: 127.0.0.1:33415) | api.anthropic.com:443 |" in (
        section
    )
    assert "| AWS\\_SECRET\\_ACCESS\\_KEY, GITHUB\\_TOKEN |" in section
    assert "**Refused connections**" in section
    assert "| example.org:443 | claude | developer | 1 | #1 |" in section
    assert "| chatgpt.com:443 | claude | reviewer | 2 | #1 |" in section
    assert "sandbox on, 6 refused connections;" in markdown


def test_an_on_sandbox_that_refused_nothing_says_so_and_an_off_one_says_why() -> None:
    """On with no refusal: a line says none was refused. Off: the reason, no such line
    (an off sandbox refuses nothing), endpoints and withheld names ``none``."""
    html, markdown = _reports(_sandboxed())
    assert "No connection was refused." in html
    assert "No connection was refused." in markdown
    assert 'id="refused"' not in html
    html, markdown = _reports(_sandboxed(check=OFF))
    assert _page(html).checks == ["false"]
    assert '<tr class="sandbox-off" data-on="false">' in html
    assert "<td>none</td><td>none</td></tr>" in html
    assert "| auto | off (bwrap not found on PATH) | none | none |" in markdown
    assert "refused" not in markdown.lower().split("**sandbox**", 1)[1].split("| by |")[0]
    assert "sandbox off;" in markdown


@given(endpoint=st.text(min_size=1) | _MARKUP, said=st.text(min_size=1) | _MARKUP)
def test_no_endpoint_or_check_text_becomes_markup(endpoint: str, said: str) -> None:
    """Whatever an endpoint, the check's words, endpoints and withheld names hold, the HTML
    page has the same tags as with plain text, and the Markdown's Sandbox section holds no
    ``<`` of theirs and no link."""
    benign, _ = _reports(_sandboxed(_refused("a:1", 1)))
    hostile = SandboxChecked(
        mode=SandboxMode.AUTO,
        on=True,
        said=said,
        endpoints=(endpoint,),
        withheld=(endpoint,),
        at=AT,
    )
    html, markdown = _reports(_sandboxed(_refused(endpoint, 1), check=hostile))
    assert _page(html).tags == _page(benign).tags
    section = _section(markdown)
    assert "<" not in section
    assert re.search(r"(?<!\\)\]\(", section) is None  # every ] of a link escaped


def test_a_hostile_endpoint_is_text_in_both_reports() -> None:
    html, markdown = _reports(_sandboxed(_refused(HOSTILE, 2)))
    assert "script" not in _page(html).tags
    assert "<td>&lt;script&gt;document.body.dataset.ran=1&lt;/script&gt;:443 " in html
    assert "&lt;script&gt;" in _section(markdown)
    assert "\\[x\\](javascript:alert(3))" in _section(markdown)


def test_the_status_rows_say_what_the_agents_ran_in_and_what_was_refused() -> None:
    """``sandbox``: the check's own words; ``refused connections``: per endpoint whoever
    asked, the first three named; ``-`` when none was refused."""
    log = _sandboxed(
        _refused("chatgpt.com:443", 3),
        _refused("example.org:443", 1),
        _refused("chatgpt.com:443", 2, Role.REVIEWER),
    )
    rows = dict(state_rows(fold(log), None, sandbox_view(log)))
    assert rows["sandbox"] == "on (bubblewrap 0.8.0; network: 127.0.0.1:33415)"
    assert rows["refused connections"] == "chatgpt.com:443 (5 times), example.org:443 (once)"
    many = _sandboxed(*(_refused(f"h{n}.example:443", 1) for n in range(5)))
    rows = dict(state_rows(fold(many), None, sandbox_view(many)))
    assert rows["refused connections"] == (
        "h0.example:443 (once), h1.example:443 (once), h2.example:443 (once), and 2 more"
    )
    off = _sandboxed(check=OFF)
    rows = dict(state_rows(fold(off), None, sandbox_view(off)))
    assert (rows["sandbox"], rows["refused connections"]) == ("off (bwrap not found on PATH)", "-")
    assert "sandbox" not in dict(state_rows(fold(off)))  # not read: no row


def test_a_status_row_never_carries_a_control_sequence() -> None:
    log = _sandboxed(_refused("evil\x1b]0;owned\x07:443", 1))
    rows = dict(state_rows(fold(log), None, sandbox_view(log)))
    assert rows["refused connections"] == "evil\\x1b]0;owned\\x07:443 (once)"


def test_a_refusal_is_one_plain_line() -> None:
    """The generic line reads well: role, agent, endpoint and count; a control sequence in
    the endpoint is escaped."""
    assert describe_event(_refused("chatgpt.com:443", 3)) == (
        "agent.connection_refused role=developer agent=claude endpoint=chatgpt.com:443 count=3"
    )
    line = describe_event(_refused("x\x1b[2J:443", 1))
    assert "\x1b" not in line
    assert "endpoint=x\\x1b[2J:443" in line


def test_the_live_panel_names_refused_connections_under_trouble() -> None:
    """Nothing of the sandbox before a refusal; after one, the endpoint and how often."""
    log = _sandboxed(_refused("chatgpt.com:443", 3), _refused("chatgpt.com:443", 1))
    view = LiveView(clock=lambda: 0.0)
    state = PipelineState()
    first = next(i for i, e in enumerate(log) if isinstance(e, ConnectionRefused))
    for index, event in enumerate(log):
        if index == first:
            assert "refused" not in _panel(view)
        state = reduce(state, event)
        view.record(state, event)
    assert "refused chatgpt.com:443 (4 times)" in " ".join(_panel(view).split())


# -- real ralph processes -----------------------------------------------------------------


def _store(tmp_path: Path, log: Sequence[PipelineEvent]) -> tuple[Path, RunId]:
    """A store holding ``log`` as one run."""
    start = log[0]
    assert isinstance(start, RunStarted)
    path = tmp_path / "hand.db"
    with SqliteEventStore(path) as store:
        store.append(start.run_id, 0, log)
    return path, start.run_id


@pytest.mark.slow
def test_status_and_report_read_the_sandbox_from_a_store(tmp_path: Path) -> None:
    """``ralph status --store`` has both rows; ``ralph report`` the section, the hostile
    endpoint as text, and says so in its line."""
    db, _run_id = _store(tmp_path, _sandboxed(_refused(HOSTILE, 2), _refused("example.org:443", 1)))
    status = ralph("status", "--store", str(db), cwd=tmp_path)
    assert status.returncode == 0, status.stderr
    (sandbox,) = [line for line in status.stdout.splitlines() if "│ sandbox " in line]
    assert "on (bubblewrap 0.8.0; network: 127.0.0.1:33415)" in sandbox
    assert "example.org:443 (once)" in status.stdout
    target = tmp_path / "report.html"
    report = ralph("report", str(db), "--html", str(target), cwd=tmp_path)
    assert report.returncode == 0, report.stderr
    assert "sandbox on, 3 refused connections" in report.stdout
    page = _page(target.read_text())
    assert page.refused[1] == ("example.org:443", "1")
    assert "script" not in page.tags
    markdown = ralph("report", str(db), "--markdown", "-", cwd=tmp_path)
    assert markdown.returncode == 0, markdown.stderr
    assert "<script" not in markdown.stdout
    assert "| example.org:443 | claude | developer | 1 | #1 |" in markdown.stdout


@pytest.mark.slow
def test_a_run_whose_sandbox_is_off_says_why_in_status_and_report(tmp_path: Path) -> None:
    """``[sandbox] mode = "auto"`` where bwrap cannot be found: the run goes on without it,
    and ``ralph status`` and ``ralph report`` say it was off and why."""
    root = hostile_workspace(tmp_path, "", extra='[sandbox]\nmode = "auto"\n')
    env = _environment(tmp_path / "home", PATH=str(_bin_without_bwrap(tmp_path)))
    done = subprocess.run(
        [*RALPH, "run", "--plain"], cwd=root, env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "lifecycle.sandbox_checked mode=auto off (bwrap not found on PATH" in done.stdout
    status = ralph("status", cwd=root)
    assert status.returncode == 0, status.stderr
    (row,) = [line for line in status.stdout.splitlines() if "│ sandbox " in line]
    assert "off (bwrap not found on PATH" in row
    report = ralph("report", "--markdown", "-", cwd=root)
    assert report.returncode == 0, report.stderr
    assert "| auto | off (bwrap not found on PATH: install bubblewrap" in report.stdout
    assert "sandbox off;" in report.stdout


@pytest.mark.slow
@pytest.mark.skipif(
    CHROMIUM is None and not os.environ.get("CI"),
    reason="no chromium here (.ci/run installs Debian's chromium)",
)
def test_chromium_runs_nothing_of_a_hostile_endpoint(tmp_path: Path) -> None:
    """The page as Chromium renders it: the refused connections' rows, and no script of the
    endpoint's ran."""
    assert CHROMIUM is not None, "CI must have chromium: .ci/run installs it"
    target = tmp_path / "report.html"
    html, _ = _reports(_sandboxed(_refused(HOSTILE, 2), _refused("example.org:443", 1)))
    target.write_text(html, encoding="utf-8")
    dumped = dump_dom(target)
    page = _page(dumped)
    assert [count for _endpoint, count in page.refused] == ["2", "1"]
    assert "data-ran" not in dumped
    assert "script" not in page.tags
