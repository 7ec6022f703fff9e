"""Turning events and states into lines and tables for people (pure formatting, no I/O)."""

from __future__ import annotations

import enum
import shlex
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

import attrs
import orjson
from rich.table import Table
from rich.text import Text

from pipeline.app.cli._report_layout import counted, shortened
from pipeline.app.cli._report_sandbox import sandbox_rows
from pipeline.app.cli._safe import terminal_safe
from pipeline.core.serialization import CONVERTER
from pipeline.core.state import PipelineState, SpendLine, Step, agents_for
from pipeline.events import (
    WIRE_TAGS,
    ChangesScreened,
    GateFinished,
    Json,
    PipelineEvent,
    RoleChain,
    SandboxChecked,
    ScreenBaseRecorded,
    ScreenScope,
)
from pipeline.reducers.views import (
    SandboxView,
    ScreenOutcome,
    ScreenRun,
    context_rows,
    cost_text,
    ladder_rows,
    models_text,
    tokens_text,
)

__all__ = [
    "active_agent",
    "answer_command",
    "describe_event",
    "screen_at_work",
    "screens_text",
    "spent",
    "state_rows",
    "state_table",
    "value_text",
    "waiting_line",
]

_MAX_VALUE = 60
_MAX_PATH = 240
"""A log's path is shown whole up to this (a path cut short cannot be opened)."""
_HITS_NAMED = 3
"""Hits a one-line account of screens names; the rest are counted."""
_SHORT_SHA = 12


def _plain(value: Any) -> str:
    """``value`` as people read it: enum values, not reprs; a chain as ``role:a>b``."""
    if isinstance(value, enum.Enum):
        return str(value.value)
    if isinstance(value, datetime):
        return value.isoformat(timespec="seconds")
    if isinstance(value, Json):
        return value.text
    if isinstance(value, RoleChain):
        return f"{value.role.value}:{'>'.join(value.agents)}"
    if attrs.has(type(value)):
        return type(value).__name__
    if isinstance(value, tuple):
        return ",".join(_plain(item) for item in value)
    return str(value)


def _show(value: Any, limit: int = _MAX_VALUE) -> str:
    text = terminal_safe(_plain(value))  # agent text: never a control sequence
    if len(text) == 64 and all(c in "0123456789abcdef" for c in text):
        return text[:12]  # a sha256 digest: the prefix identifies it for people
    # One fact, one line: a multi-line value (a commit message) keeps its breaks as \n.
    text = text.replace("\r", "\\r").replace("\n", "\\n")
    return shortened(text, limit)


def describe_event(event: PipelineEvent) -> str:
    """One line: the event's wire tag and its fields but the time; a gate's report says how
    it ended, the last line of its output and where the whole output is; a screen, what it
    found."""
    if isinstance(event, GateFinished):
        return _gate_finished(event)
    if isinstance(event, ChangesScreened):
        return _changes_screened(event)
    if isinstance(event, ScreenBaseRecorded):
        return f"{WIRE_TAGS[type(event)]} sha={_commit(event.sha)}"
    if isinstance(event, SandboxChecked):
        # The withheld names can be many: how many, here; which, in the log and the report.
        withheld = f" withheld={len(event.withheld)} variables" if event.withheld else ""
        return f"{WIRE_TAGS[type(event)]} mode={event.mode.value} {_show(event.said)}{withheld}"
    fields = [
        f"{f.name}={_show(getattr(event, f.name))}"
        for f in attrs.fields(type(event))
        if f.name != "at" and getattr(event, f.name) is not None
    ]
    return f"{WIRE_TAGS[type(event)]} " + " ".join(fields)


def _gate_finished(event: GateFinished) -> str:
    """A gate's report on one line. Its command and output digest are left to the log: the
    command can be a whole script, and the first characters of its output say less than its
    last line (a test runner's summary)."""
    fields = [
        f"gate={_show(event.gate)}",
        f"boundary={event.boundary.value}",
        f"status={event.status.value}",
    ]
    if event.exit_code is not None:
        fields.append(f"exit_code={event.exit_code}")
    fields.append(f"duration={event.duration_ms / 1000:.3f}s")
    last = event.tail.rstrip().rsplit("\n", 1)[-1].strip()
    if last:
        fields.append(f"last_line={_show(last)}")
    fields.append(f"log_path={_show(event.log_path, _MAX_PATH)}")
    pinned = "" if event.pinned is None else f" pinned={_commit(event.pinned)}"
    return f"{WIRE_TAGS[type(event)]} " + " ".join(fields) + pinned


def _commit(sha: str | None) -> str:
    """A commit as people read it: its first characters, or ``empty-tree`` for none."""
    return "empty-tree" if sha is None else _show(sha[:_SHORT_SHA])


def _changes_screened(event: ChangesScreened) -> str:
    """A screen's report on one line: where from, how many files, and its first hits (kind
    and place; their details are in the log and the report)."""
    hits = event.hits
    named = "; ".join(
        _show(f"{h.kind.value} {h.path}:{h.line}" if h.line else f"{h.kind.value} {h.path}")
        for h in hits[:_HITS_NAMED]
    )
    more = f"; and {len(hits) - _HITS_NAMED} more" if len(hits) > _HITS_NAMED else ""
    found = f"({named}{more})" if hits else "(clean)"
    return (
        f"{WIRE_TAGS[type(event)]} scope={event.scope.value} base={_commit(event.base)} "
        f"files={event.files} hits={len(hits)} {found}"
    )


def answer_command(state: PipelineState, workspace: Path | None = None) -> str | None:
    """The exact ``ralph respond`` command that answers the question the run waits on (None
    when it waits on none, or the question has no id yet); ``workspace`` adds ``-C``."""
    question = state.ledger.pending_question
    if question is None or not question.asked or state.run is None:
        return None
    where = "" if workspace is None else f" -C {shlex.quote(str(workspace))}"
    return (
        f"ralph respond{where} --run {shlex.quote(state.run.run_id)} "
        f"--question {question.question_id} 'YOUR ANSWER'"
    )


def waiting_line(state: PipelineState, workspace: Path | None = None) -> str | None:
    """One line saying the run waits for a person: the question, its deadline and how to
    answer it (None when it waits for nobody)."""
    command = answer_command(state, workspace)
    question = state.ledger.pending_question
    if command is None or question is None:
        return None
    return (
        f"waiting for a person until {_show(question.deadline)}: {question.question!r}; "
        f"answer with: {command}"
    )


def _gate_at_work(state: PipelineState) -> str | None:
    """The gate whose command runs now and the boundary it runs at: ``gate tests (final)``."""
    round_ = state.gating.round
    if round_ is None or round_.in_flight is None:
        return None
    boundary = next((b for name, b in round_.pending if name == round_.in_flight), None)
    where = "" if boundary is None else f" ({boundary.value})"
    return f"gate {round_.in_flight}{where}"


def screen_at_work(state: PipelineState) -> bool:
    """Whether the run is screening its changes now: its round of gates opened with the
    screen still due."""
    round_ = state.gating.round
    return state.progress.step is Step.GATE and round_ is not None and round_.screen_due


def active_agent(state: PipelineState) -> str | None:
    """Who works now: the gate whose command runs (``gate tests (final)``), the screen of the
    run's changes, or the role (its hat's name when it has one), the agent of its chain in
    use, the attempt and the retries spent; None when nothing is at work."""
    gate = _gate_at_work(state)
    if gate is not None:
        return gate
    if screen_at_work(state):
        round_ = state.gating.round
        task = round_ is not None and round_.scope is ScreenScope.ITERATION
        return "screening the task's changes" if task else "screening the run's changes"
    role = state.progress.role
    if role is None or state.run is None:
        return None
    chain = agents_for(state, role)  # a topology hat's own chain, a fork's agent first
    position = state.agent.chain_position
    agent = chain[position] if position < len(chain) else "?"
    hat = state.run.loop.hat(role)
    who = role.value if hat is None or hat.name == role.value else f"{role.value} ({hat.name})"
    text = f"{who}: {agent}"
    if position:
        text += f" (fallback {position} of {len(chain) - 1})"
    if state.agent.attempt:
        text += f", attempt {state.agent.attempt}"
    if state.agent.retries:
        text += f", {state.agent.retries} retries"
    return text


def spent(line: SpendLine) -> str:
    """The known cost of ``line`` and how many invocations it covers: ``$0.42 + 3 of unknown
    cost (7 invocations)``, ``unknown (2 invocations)``, or that none reported usage."""
    if line.invocations == 0:
        return "no usage reported"
    return f"{cost_text(line)} ({counted(line.invocations, 'invocation')})"


def _by(lines: dict[str, SpendLine]) -> str:
    costs = ((name, cost_text(line)) for name, line in lines.items())  # unknown unknown: once
    return ", ".join(name if name == cost else f"{name} {cost}" for name, cost in costs) or "-"


def screens_text(screens: Sequence[ScreenRun]) -> str:
    """The run's screens on one line: ``2 screens, clean``, or the hits (each kind and place
    once, the first few named) and what the last screen did; ``none yet`` before the first."""
    if not screens:
        return "none yet"
    count = counted(len(screens), "screen")
    hits = [hit for screen in screens for hit in screen.hits]
    if not hits:
        return f"{count}, clean"
    named = list(dict.fromkeys(f"{h.hit.kind.value} {h.where}" for h in hits))
    more = f", and {len(named) - _HITS_NAMED} more" if len(named) > _HITS_NAMED else ""
    last = screens[-1].outcome
    said = "clean" if last is ScreenOutcome.CLEAN else f"{last.value} the run"
    return (
        f"{count}, {counted(len(hits), 'hit')}: {', '.join(named[:_HITS_NAMED])}{more}; "
        f"the last screen {said}"
    )


def state_rows(
    state: PipelineState,
    screens: Sequence[ScreenRun] | None = None,
    sandbox: SandboxView | None = None,
) -> list[tuple[str, str]]:
    """The state's headline figures as (what, value) pairs, for tables in any format; values
    that agents wrote (the question, the last error, a screen's paths, an endpoint) are
    :func:`terminal_safe`. ``screens`` (read from the log: the state only counts hits) adds
    a ``screen`` row for a run that screens its changes; ``sandbox`` (read from the log: the
    state keeps nothing of it) the ``sandbox`` and ``refused connections`` rows of a run
    that recorded its sandbox."""
    run, progress, ledger = state.run, state.progress, state.ledger
    budget = run.budget if run else None
    question = ledger.pending_question
    spend = ledger.spend
    # Only a salvaged run has the row: what its damaged log lost is worth a line of its own.
    salvaged = [("salvaged", ledger.salvages[-1])] if ledger.salvages else []
    chosen = [f"agent {run.agent} first"] if run and run.agent else []
    chosen += [f"model {run.model}"] if run and run.model else []
    forked = [("fork's own", ", ".join(chosen))] if chosen else []
    topology = run is not None and run.loop.topology is not None
    # A topology has hats instead of review passes: where it stands in its routing.
    passes = (
        _routing_rows(state)
        if topology
        else [
            (
                "review pass",
                f"{progress.review_pass}/{budget.max_review_passes}"
                if budget
                else str(progress.review_pass),
            )
        ]
    )
    gating = state.gating
    gates = (
        [
            ("gates", f"{gating.ran} run, {gating.blocked} blocked, {gating.warned} warned"),
            ("last gate block", gating.last_block or "-"),
        ]
        if run is not None and run.loop.gates
        else []
    )
    screened = (
        [("screen", screens_text(screens))]
        if screens is not None and run is not None and run.loop.screens
        else []
    )
    rows = [
        ("run", run.run_id if run else "(not started)"),
        ("phase", progress.phase.value),
        ("step", progress.step.value),
        (
            "iteration",
            f"{progress.iteration}/{budget.max_iterations}" if budget else str(progress.iteration),
        ),
        *passes,
        ("active", active_agent(state) or "-"),
        ("termination", progress.termination.value if progress.termination else "-"),
        ("exit code", str(progress.termination.exit_code) if progress.termination else "-"),
        ("events folded", str(state.sequence)),
        ("agent failures", str(ledger.agent_failures)),
        ("commits", str(ledger.commits)),
        ("cost", spent(spend.total)),
        ("tokens", tokens_text(spend.total)),
        ("cost by role", _by({role.value: line for role, line in spend.by_role.items()})),
        (
            "cost by model",
            _by({models_text((model,)): line for model, line in spend.by_model.items()}),
        ),
        ("checkpoints", str(state.checkpoints.count)),
        ("topics published", str(state.intake.topics_published)),
        ("malformed lines", str(state.intake.malformed_lines)),
        ("scope violations", str(state.intake.scope_violations)),
        *gates,
        *screened,
        *ladder_rows(state),
        *context_rows(state),
        *sandbox_rows(sandbox),
        ("resumes", str(ledger.resumes)),
        *salvaged,
        *forked,
        ("waiting for a limit's reset", _limit_wait(state)),
        ("waiting for an answer to", question.question if question else "-"),
        ("answer with", answer_command(state) or "-"),
        ("last error", ledger.last_error or "-"),
        ("anomalies", str(ledger.anomalies)),
    ]
    return [(what, terminal_safe(value)) for what, value in rows]


def _limit_wait(state: PipelineState) -> str:
    """The reset the run waits for (or stopped for), as the provider told it, or ``-``."""
    until = state.agent.limit_until
    if until is None:
        return "-"
    stopped = " (stopped: ralph resume once it has reset)" if state.agent.limit_stop else ""
    return f"{until.isoformat()}{stopped}"


def _routing_rows(state: PipelineState) -> list[tuple[str, str]]:
    """A topology's hat at work (and what woke it), each hat's activations, and the topics
    waiting for a hat or dropped."""
    routing = state.routing
    woke = f" (woken by {routing.trigger.topic})" if routing.trigger is not None else ""
    counts = ", ".join(f"{hat} {count}" for hat, count in routing.activations) or "-"
    waiting = ", ".join(t.topic for t in routing.pending) or "-"
    return [
        ("hat", f"{routing.hat}{woke}" if routing.hat else "-"),
        ("activations", counts),
        ("topics waiting", waiting),
        ("topics dropped", str(routing.dropped)),
    ]


def state_table(
    state: PipelineState,
    title: str = "Run state",
    screens: Sequence[ScreenRun] | None = None,
    sandbox: SandboxView | None = None,
) -> Table:
    """The state's headline figures as a two-column table (its text never read as rich
    markup or emoji codes: ``root:x:0:0`` stays itself); ``screens`` and ``sandbox`` as for
    :func:`state_rows`."""
    table = Table(title=Text(terminal_safe(title)), show_header=False)
    table.add_column("what", style="bold")
    table.add_column("value")
    for what, value in state_rows(state, screens, sandbox):
        table.add_row(Text(what), Text(value))
    return table


def value_text(value: Any) -> str:
    """A state value on one line: a string as it is, anything else as the JSON of its
    converter form (``ralph diff`` and ``ralph serve``'s time travel show changes so)."""
    data = CONVERTER.unstructure(value)
    return data if isinstance(data, str) else orjson.dumps(data, default=str).decode()
