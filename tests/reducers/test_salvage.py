"""``RunSalvaged``: a note that the log was copied past damage, which changes no decision."""

from __future__ import annotations

from datetime import UTC, datetime

from pipeline.core.effects import CreateCommit
from pipeline.core.state import Phase, PipelineState, Step
from pipeline.events import Count, Instant, RunAbandoned, RunInterrupted, RunResumed, RunSalvaged
from pipeline.orchestration import next_effect
from pipeline.reducers import fold, reduce
from tests.support import scripted_run

T = Instant(datetime(2026, 3, 1, tzinfo=UTC))
SALVAGED = RunSalvaged(source="old.db", kept=Count(7), reason="event 7 is missing", at=T)


def test_a_salvage_keeps_the_phase_and_the_next_effect_at_every_point_of_a_run() -> None:
    """After every prefix of a whole run, recording RunSalvaged keeps the phase, the step and
    the effect asked for next with its id (effect ids do not count the fact), and keeps the
    note; a complete run takes it with no anomaly."""
    events = scripted_run().events
    for cut in range(1, len(events) + 1):
        state = fold(events[:cut])
        after = reduce(state, SALVAGED)
        assert (after.phase, after.progress.step) == (state.phase, state.progress.step)
        assert after.ledger.anomalies == state.ledger.anomalies, cut
        assert after.ledger.salvages == ("from old.db: kept 7 events; event 7 is missing",)
        assert next_effect(after).effect_id == next_effect(state).effect_id, cut
        assert type(next_effect(after)) is type(next_effect(state))
    assert fold(events).phase is Phase.COMPLETE


def test_a_commit_step_whose_facts_the_damage_lost_is_asked_for_under_its_own_id() -> None:
    """Damage lost the commit step's facts; after the salvage and a resume the commit is
    asked for again under the id it had, so its handler finds the commit by its trailer."""
    state = PipelineState()
    for event in scripted_run().events:
        state = reduce(state, event)
        if state.progress.step is Step.COMMIT:
            break
    first = next_effect(state)
    assert isinstance(first, CreateCommit)
    again = next_effect(reduce(reduce(state, SALVAGED), RunResumed(checkpoint_sequence=None, at=T)))
    assert isinstance(again, CreateCommit)
    assert again.effect_id == first.effect_id
    assert again.may_exist is True


def test_an_interrupted_run_takes_a_salvage_and_then_its_resumption() -> None:
    """An interrupted run stays interrupted after the note, and resumes as before."""
    started = fold(scripted_run().events[:3])
    interrupted = reduce(started, RunInterrupted(reason="SIGINT", at=T))
    salvaged = reduce(interrupted, SALVAGED)
    assert salvaged.phase is Phase.INTERRUPTED
    assert salvaged.ledger.anomalies == interrupted.ledger.anomalies
    assert (
        reduce(salvaged, RunResumed(checkpoint_sequence=None, at=T)).phase
        is reduce(interrupted, RunResumed(checkpoint_sequence=None, at=T)).phase
    )
    assert reduce(salvaged, RunAbandoned(reason="gone", at=T)).phase is Phase.FINALIZING


def test_a_salvage_of_a_run_not_started_is_an_anomaly() -> None:
    """No run, nothing salvaged: recorded as an anomaly, never raised."""
    after = reduce(PipelineState(), SALVAGED)
    assert after.ledger.anomalies == 1
    assert after.ledger.salvages == ()
    assert after.phase is Phase.NOT_STARTED
