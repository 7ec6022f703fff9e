"""The effect that begins a phase's task: the fact each world records for it, and where the
runtime budget is checked."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from pipeline.app.workspace import open_workspace
from pipeline.core import effects as fx
from pipeline.core.effects import EffectId
from pipeline.core.state import Phase
from pipeline.engine.simulation import ScriptedChooser, SimulatedWorld, WorldConfig, default_chains
from pipeline.events import (
    BudgetExceeded,
    BudgetKind,
    Count,
    DevelopmentIterationStarted,
    Digest,
    FinalizingStarted,
    FixAttemptStarted,
    GateBoundary,
    HatActivated,
    Ordinal,
    PipelineEvent,
    PlanningStarted,
    ReviewPassStarted,
)
from pipeline.handlers.runtime import Runtime
from tests.runtime.workspace import make_workspace
from tests.support import budget

T = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
E = EffectId("r:1")

BEGINS: list[tuple[fx.Begin, PipelineEvent]] = [
    (fx.Begin(effect_id=E, phase=Phase.PLANNING), PlanningStarted(at=T)),
    (
        fx.Begin(effect_id=E, phase=Phase.DEVELOPMENT, iteration=Count(2)),
        DevelopmentIterationStarted(iteration=Ordinal(2), at=T),
    ),
    (
        fx.Begin(
            effect_id=E,
            phase=Phase.DEVELOPMENT,
            iteration=Count(3),
            hat="builder",
            topic="build.start",
        ),
        HatActivated(iteration=Ordinal(3), hat="builder", topic="build.start", at=T),
    ),
    (
        fx.Begin(effect_id=E, phase=Phase.REVIEW, review_pass=Count(1)),
        ReviewPassStarted(review_pass=Ordinal(1), at=T),
    ),
    (
        fx.Begin(effect_id=E, phase=Phase.REVIEW, fixing=True, review_pass=Count(1)),
        FixAttemptStarted(review_pass=Ordinal(1), at=T),
    ),
    (fx.Begin(effect_id=E, phase=Phase.FINALIZING), FinalizingStarted(at=T)),
]
IDS = ["planning", "iteration", "activation", "review", "fix", "finalizing"]


def _runtime(root: Path, deadline: datetime | None) -> Runtime:
    make_workspace(root, scripts={}, agents={"main": ["true"]}, budgets="max_runtime_s = 60")
    workspace = open_workspace(root)
    return Runtime(
        layout=workspace.layout,
        config=workspace.config,
        config_digest=Digest("0"),
        clock=lambda: T,
        run_id="r",
        deadline=deadline,
    )


@pytest.mark.parametrize(("effect", "fact"), BEGINS, ids=IDS)
def test_each_world_records_the_same_start_fact(
    tmp_path: Path, effect: fx.Begin, fact: PipelineEvent
) -> None:
    """The simulated world and the real runtime (its budget not spent) record the one fact
    that starts the phase's task."""
    config = WorldConfig(budget=budget(), chains=default_chains(("a",)), rebase_onto=None)
    world = SimulatedWorld(config=config, chooser=ScriptedChooser(answers={}), clock=lambda: T)
    assert fx.started(effect, T) == fact
    assert world(effect) == (fact,)
    assert _runtime(tmp_path, T + timedelta(seconds=1))(effect) == (fact,)


@pytest.mark.parametrize(("effect", "fact"), BEGINS, ids=IDS)
def test_a_spent_runtime_budget_stops_every_begin_but_finalizing(
    tmp_path: Path, effect: fx.Begin, fact: PipelineEvent
) -> None:
    """Past the runtime deadline, a begin reports the budget spent instead of its fact,
    except finalizing, which must still run to end the run."""
    facts = _runtime(tmp_path, T - timedelta(seconds=1))(effect)
    if isinstance(fact, FinalizingStarted):
        assert facts == (fact,)
    else:
        (spent,) = facts
        assert isinstance(spent, BudgetExceeded)
        assert spent.budget is BudgetKind.RUNTIME


@pytest.mark.parametrize(("effect", "fact"), BEGINS, ids=IDS)
def test_the_runtime_budget_is_measured_where_a_task_begins_and_before_a_gate(
    effect: fx.Begin, fact: PipelineEvent
) -> None:
    """``measures_runtime`` holds for every begin but finalizing's, and for a gate."""
    assert fx.measures_runtime(effect) is not isinstance(fact, FinalizingStarted)
    gate = fx.RunGate(
        effect_id=E, gate="tests", boundary=GateBoundary.FINAL, argv=("true",), timeout_s=Count(1)
    )
    assert fx.measures_runtime(gate)
    assert not fx.measures_runtime(fx.ValidateFinalState(effect_id=E))
    assert not fx.measures_runtime(fx.StartRun(effect_id=E))
