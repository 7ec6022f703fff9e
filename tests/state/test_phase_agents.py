"""Which agent works in which phase: the one table ``agent_of`` and ``Progress.role`` read."""

from __future__ import annotations

import pytest

from pipeline.core.state import Progress
from pipeline.core.state.phase import AGENT_OF_PHASE, Phase, agent_of
from pipeline.events.values import PromptKind, Role


@pytest.mark.parametrize("phase", list(Phase), ids=lambda p: p.value)
@pytest.mark.parametrize("fixing", [False, True])
def test_the_agent_of_a_phase_is_the_tables_and_progress_names_its_role(
    phase: Phase, fixing: bool
) -> None:
    """``agent_of`` gives the table's pair, or None where no agent works, and a run's
    progress in that phase names the pair's role."""
    expected = AGENT_OF_PHASE.get((phase, fixing and phase is Phase.REVIEW))
    assert agent_of(phase, fixing) == expected
    role = Progress(phase=phase, fixing=fixing).role
    assert role == (None if expected is None else expected[0])


def test_the_review_fix_is_the_developers() -> None:
    """In review, fixing hands the work to the developer with the fix prompt; elsewhere
    ``fixing`` changes nothing."""
    assert agent_of(Phase.REVIEW, True) == (Role.DEVELOPER, PromptKind.REVIEW_FIX)
    assert agent_of(Phase.REVIEW, False) == (Role.REVIEWER, PromptKind.REVIEW)
    assert agent_of(Phase.PLANNING, True) == (Role.PLANNER, PromptKind.PLANNING)
    assert agent_of(Phase.COMPLETE, False) is None
