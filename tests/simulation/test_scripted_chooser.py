"""The scripted simulated world refuses a script that does not fit the run it drove: a
misspelled choice would otherwise leave the run on the happy path, and the test would check
a story that never happened."""

from __future__ import annotations

import pytest

from pipeline.core.state import TerminationReason
from pipeline.engine.simulation import Always
from pipeline.events import IterationStatus
from tests.support import scripted_run


def test_a_misspelled_choice_is_refused_naming_the_choices_made() -> None:
    """``"iteration stauts"`` is no choice the world makes: the run is refused, not passed."""
    with pytest.raises(ValueError, match="'iteration stauts' was never asked") as raised:
        scripted_run({"iteration stauts": [IterationStatus.FAILED]})
    assert "iteration status" in str(raised.value)  # among the choices the world did make


def test_answers_the_run_never_used_are_refused() -> None:
    """Three scripted statuses for a run that ends after two iterations."""
    with pytest.raises(ValueError, match="'iteration status' has 1 answers left unused"):
        scripted_run({"iteration status": [IterationStatus.FAILED] * 3})


def test_an_always_answer_is_given_every_time_and_never_left_over() -> None:
    """``Always(FAILED)``: every iteration fails, and nothing is left over at the end."""
    result = scripted_run({"iteration status": [Always(IterationStatus.FAILED)]})
    assert result.state.termination is TerminationReason.CONSECUTIVE_FAILURES
