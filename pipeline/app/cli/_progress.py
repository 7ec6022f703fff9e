"""How ``ralph run`` / ``resume`` / ``demo`` show a run as it goes (I/O: writes to the console).

Four ways, chosen by :func:`choose_display`:

- **live** (stdout is a terminal): every fact as a line, under them a panel that stays in
  place and shows the phase, iteration i/N, review pass, the hat and agent at work (or the
  gate whose command runs, or the screen of the run's changes, and for how long), the time
  since the run began (ticking while an agent works), the cost so far and the tokens (from
  the run's ledger; unknown costs named as such, never $0), agent failures, fallbacks,
  retries, gate blocks and the connections the sandbox refused, and the last topics the
  agents published; while the run waits for a person, the question, its deadline and the
  exact ``ralph respond`` command instead of who is at work;
- **plain** (not a terminal, or ``--plain``): the same lines, no panel, no control sequences,
  and one line saying the run waits for a person (question and command) when it starts to;
- **quiet** (``--quiet``): nothing until the summary;
- **json** (``--json-logs``): one JSON object per fact (sequence, phase, the event as stored),
  for machines.
"""

from __future__ import annotations

import contextlib
import enum
import sys
import time
from collections import deque
from collections.abc import Callable, Iterator
from pathlib import Path

import orjson
from rich.console import Console, Group, RenderableType
from rich.live import Live
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from pipeline.app.cli._render import describe_event, waiting_line
from pipeline.app.cli._safe import terminal_safe
from pipeline.core.serialization import unstructure_event
from pipeline.core.state import PipelineState
from pipeline.events import (
    ConnectionRefused,
    GateStarted,
    HumanQuestionAsked,
    InvocationStarted,
    PipelineEvent,
    RunResumed,
    TopicPublished,
)
from pipeline.reducers.views import (
    active_agent,
    answer_command,
    refused_text,
    sandbox_view,
    screen_at_work,
    spent,
)

__all__ = ["Display", "LiveView", "choose_display", "showing"]

_LAST_TOPICS = 5


class Display(enum.Enum):
    """How a run is shown while it goes."""

    LIVE = "live"
    PLAIN = "plain"
    QUIET = "quiet"
    JSON = "json"


def choose_display(*, terminal: bool, plain: bool, quiet: bool, json_logs: bool) -> Display:
    """The display the options ask for: ``--json-logs`` first, then ``--quiet``, then plain
    output unless stdout is a terminal."""
    if json_logs:
        return Display.JSON
    if quiet:
        return Display.QUIET
    if plain or not terminal:
        return Display.PLAIN
    return Display.LIVE


def event_line(state: PipelineState, event: PipelineEvent) -> str:
    """One fact as a line: its position, the phase after it, and the fact."""
    return f"{state.sequence:>4} {state.phase.value:<16} {describe_event(event)}"


def _elapsed(seconds: float) -> str:
    minutes, secs = divmod(int(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes:02d}m{secs:02d}s" if hours else f"{minutes}m{secs:02d}s"


class LiveView:
    """The panel of the live display: re-rendered on every fact and four times a second."""

    def __init__(
        self, clock: Callable[[], float] = time.monotonic, workspace: Path | None = None
    ) -> None:
        self._clock = clock
        self._workspace = workspace
        self._began = clock()
        self.state = PipelineState()
        self.fallbacks = 0
        self.retries = 0
        self.topics: deque[str] = deque(maxlen=_LAST_TOPICS)
        self._refusals: list[ConnectionRefused] = []
        # The gate last started and when, on the clock: how long the one at work has run.
        self._gate_since: tuple[str, float] | None = None
        # When this view saw the screen of the run's changes begin (it reports no start).
        self._screen_since: float | None = None

    def record(self, state: PipelineState, event: PipelineEvent) -> None:
        """Take in one fact and the state after it."""
        self.state = state
        if isinstance(event, InvocationStarted):
            self.fallbacks += state.agent.chain_position > 0 and state.agent.retries == 0
            self.retries += state.agent.retries > 0
        elif isinstance(event, TopicPublished):
            self.topics.append(terminal_safe(event.topic))
        elif isinstance(event, GateStarted):
            self._gate_since = (event.gate, self._clock())
        elif isinstance(event, ConnectionRefused):
            self._refusals.append(event)
        if not screen_at_work(state):
            self._screen_since = None
        elif self._screen_since is None:
            self._screen_since = self._clock()

    def _at_work(self) -> str:
        """Who works now; for a gate or the screen, how long it has run (when this view saw
        it start: a resumed run's gate has no start here)."""
        who = active_agent(self.state) or "-"
        if self._screen_since is not None and screen_at_work(self.state):
            return f"{who}, since {_elapsed(self._clock() - self._screen_since)}"
        round_ = self.state.gating.round
        in_flight = round_.in_flight if round_ is not None else None
        if in_flight is None or self._gate_since is None or self._gate_since[0] != in_flight:
            return who
        return f"{who}, since {_elapsed(self._clock() - self._gate_since[1])}"

    def __rich__(self) -> RenderableType:
        """The panel as it stands now (the elapsed time is read at each refresh)."""
        state = self.state
        progress, budget = state.progress, state.run.budget if state.run else None
        grid = Table.grid(padding=(0, 2))
        grid.add_column(style="bold")
        grid.add_column()

        def row(what: str, value: str) -> None:
            # never markup or emoji: agent names and topics are in these values
            grid.add_row(Text(what), Text(terminal_safe(value)))

        iteration = f"{progress.iteration}/{budget.max_iterations}" if budget else "-"
        review = f"{progress.review_pass}/{budget.max_review_passes}" if budget else "-"
        row("phase", f"{progress.phase.value} ({progress.step.value})")
        row("iteration", f"{iteration}    review pass {review}")
        command = answer_command(state, self._workspace)
        question = state.ledger.pending_question
        if command is not None and question is not None:
            # Nobody is at work: the run waits for a person, who must see how to answer.
            row("waiting", f"for a person, until {question.deadline:%Y-%m-%d %H:%M:%S}")
            row("question", question.question)
            row("answer with", command)
        else:
            row("at work", self._at_work())
        total = state.ledger.spend.total
        row("spent", f"{spent(total)}, {total.tokens:,} tokens")
        # Only a run with gates or a screen has gate blocks to count (a screen's hits block
        # as a gate's failure does).
        loop = state.run.loop if state.run is not None else None
        gated = loop is not None and (bool(loop.gates) or loop.screens)
        blocks = f", {state.gating.blocked} gate blocks" if gated else ""
        # Only a run whose agents were refused a connection says so (the sandbox is off by
        # default): which endpoints, and how often.
        refused = refused_text(sandbox_view(self._refusals).refused)
        refusals = f", refused {refused}" if refused else ""
        row(
            "trouble",
            f"{state.ledger.agent_failures} agent failures, {self.fallbacks} fallbacks, "
            f"{self.retries} retries, {state.intake.malformed_lines} malformed lines{blocks}"
            f"{refusals}",
        )
        row("topics", ", ".join(self.topics) or "-")
        title = Text(f"ralph {terminal_safe(state.run.run_id) if state.run else 'starting'}")
        elapsed = Text(f"elapsed {_elapsed(self._clock() - self._began)}")
        return Panel(grid, title=title, subtitle=elapsed, expand=False)


@contextlib.contextmanager
def showing(
    display: Display, console: Console, workspace: Path | None = None
) -> Iterator[Callable[[PipelineState, PipelineEvent], None]]:
    """A callback that shows each fact of a run the way ``display`` says, for as long as the
    block runs (the live panel is taken down at its end, leaving the lines). ``workspace``
    goes into the ``ralph respond -C`` command shown while the run waits for a person."""
    match display:
        case Display.QUIET:
            yield lambda _state, _event: None
        case Display.PLAIN:

            def line(state: PipelineState, event: PipelineEvent) -> None:
                # A wait for a person is said after the question is asked, and after a
                # resume that goes on waiting.
                asked = isinstance(event, HumanQuestionAsked | RunResumed)
                notice = waiting_line(state, workspace) if asked else None
                for said in (event_line(state, event), notice and terminal_safe(notice)):
                    if said:
                        console.print(
                            said, soft_wrap=True, markup=False, highlight=False, emoji=False
                        )

            yield line
        case Display.JSON:

            def emit(state: PipelineState, event: PipelineEvent) -> None:
                line = {
                    "sequence": state.sequence - 1,
                    "phase": state.phase.value,
                    "event": unstructure_event(event),
                }
                sys.stdout.write(orjson.dumps(line).decode() + "\n")
                sys.stdout.flush()

            yield emit
        case Display.LIVE:
            view = LiveView(workspace=workspace)
            with Live(view, console=console, refresh_per_second=4, transient=True) as live:

                def show(state: PipelineState, event: PipelineEvent) -> None:
                    view.record(state, event)
                    live.console.print(
                        Group(Text(event_line(state, event), overflow="fold")), soft_wrap=True
                    )
                    live.refresh()

                yield show
