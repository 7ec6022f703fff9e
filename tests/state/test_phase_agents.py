"""Which agent works in which phase: the one table both lookups read."""

from __future__ import annotations

import pytest

from pipeline.core.state.phase import AGENT_OF_PHASE, Phase, prompt_kind_for, role_for
from pipeline.events.values import PromptKind, Role


@pytest.mark.parametrize("phase", list(Phase), ids=lambda p: p.value)
@pytest.mark.parametrize("fixing", [False, True])
def test_role_and_prompt_agree_with_the_table(phase: Phase, fixing: bool) -> None:
    """Both lookups give the table's pair, or both give None where no agent works."""
    pair = (role_for(phase, fixing), prompt_kind_for(phase, fixing))
    expected = AGENT_OF_PHASE.get((phase, fixing and phase is Phase.REVIEW))
    assert pair == (expected if expected is not None else (None, None))


def test_the_review_fix_is_the_developers() -> None:
    """In review, fixing hands the work to the developer with the fix prompt; elsewhere
    ``fixing`` changes nothing."""
    assert role_for(Phase.REVIEW, True) is Role.DEVELOPER
    assert prompt_kind_for(Phase.REVIEW, True) is PromptKind.REVIEW_FIX
    assert role_for(Phase.REVIEW, False) is Role.REVIEWER
    assert role_for(Phase.PLANNING, True) is Role.PLANNER
    assert role_for(Phase.COMPLETE, False) is None
