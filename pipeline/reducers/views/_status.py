"""What ``ralph status`` shows of a run, as (what, value) rows (pure): the state's headline
figures, with the screens and the sandbox the log records.

The rows are the run's own text, not yet made safe for a terminal (the command line and the
pages do that as they show them); the store's ``run_status`` projection keeps them as of each
run's head (:mod:`pipeline.handlers.store._summaries`), so ``ralph status`` can print them
without folding the log.
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from pathlib import Path
from typing import Final

from pipeline.core.state import PipelineState, SpendLine, Step, agents_for
from pipeline.events import ScreenScope
from pipeline.reducers.views._context import context_rows
from pipeline.reducers.views._escalation import ladder_rows
from pipeline.reducers.views._gates import ScreenOutcome, ScreenRun
from pipeline.reducers.views._sandbox import RefusedConnection, SandboxView
from pipeline.reducers.views._spend import cost_text, models_text, tokens_text

__all__ = [
    "active_agent",
    "answer_command",
    "counted",
    "refused_text",
    "sandbox_rows",
    "screen_at_work",
    "screens_text",
    "spent",
    "status_rows",
]

_HITS_NAMED: Final = 3
"""Hits a one-line account of screens names; the rest are counted."""
_ENDPOINTS_NAMED: Final = 3
"""Endpoints a one-line account of refused connections names; the rest are counted."""


def counted(number: int, what: str) -> str:
    """``number`` and ``what``, plural unless it is one: ``1 screen``, ``3 hits``."""
    return f"{number} {what}" + ("" if number == 1 else "s")


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
    # By name: a state folded from a checkpoint holds its maps in the checkpoint's key order,
    # one folded live in the order first spent, and the row must not depend on which it is.
    costs = ((name, cost_text(line)) for name, line in sorted(lines.items()))  # unknown: once
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


def status_rows(
    state: PipelineState,
    screens: Sequence[ScreenRun] | None = None,
    sandbox: SandboxView | None = None,
) -> list[tuple[str, str]]:
    """The state's headline figures as (what, value) pairs, values as the run wrote them.
    ``screens`` (read from the log: the state only counts hits) adds a ``screen`` row for a
    run that screens its changes; ``sandbox`` (read from the log: the state keeps nothing of
    it) the ``sandbox`` and ``refused connections`` rows of a run that recorded its sandbox."""
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
    return [
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


def _times(count: int) -> str:
    """As the agent's notice says it: ``once``, ``3 times``."""
    return "once" if count == 1 else f"{count} times"


def refused_text(refused: Sequence[RefusedConnection]) -> str:
    """Refused connections on one line, per endpoint whoever asked, the first few named:
    ``chatgpt.com:443 (3 times), example.org:443 (once)`` (empty when none was refused)."""
    times: dict[str, int] = {}
    for entry in refused:
        times[entry.endpoint] = times.get(entry.endpoint, 0) + entry.count
    named = [f"{endpoint} ({_times(count)})" for endpoint, count in times.items()]
    more = f", and {len(named) - _ENDPOINTS_NAMED} more" if len(named) > _ENDPOINTS_NAMED else ""
    return ", ".join(named[:_ENDPOINTS_NAMED]) + more


def sandbox_rows(view: SandboxView | None) -> list[tuple[str, str]]:
    """``ralph status``'s rows: what the agents ran in (the check's own words) and the
    connections refused (none when the log says nothing of the sandbox, or was not read)."""
    if view is None or not view.recorded:
        return []
    check = view.check
    return [
        ("sandbox", "-" if check is None else check.said),
        ("refused connections", refused_text(view.refused) or "-"),
    ]
