"""The fast copy functions stay in step with the records they copy."""

from __future__ import annotations

import inspect

import attrs
from hypothesis import given

from pipeline.reducers._build import build_state
from pipeline.state import Ledger, PipelineState, Progress
from pipeline.state.changes import intake_with, ledger_with, progress_with
from pipeline.testing import reachable_states


def _keyword_parameters(function: object) -> list[str]:
    parameters = inspect.signature(function).parameters.values()  # type: ignore[arg-type]
    return [p.name for p in parameters if p.kind is inspect.Parameter.KEYWORD_ONLY]


def test_progress_with_takes_every_field_of_progress() -> None:
    """A field added to Progress but not here would be reset to its default on every change."""
    assert _keyword_parameters(progress_with) == [f.name for f in attrs.fields(Progress)]


def test_ledger_with_takes_every_field_of_ledger() -> None:
    """Likewise for Ledger (regenerate with scripts/generate_changes.py)."""
    assert _keyword_parameters(ledger_with) == [f.name for f in attrs.fields(Ledger)]


def test_the_generated_module_is_up_to_date() -> None:
    """changes.py is what the generator makes from the classes now (formatting aside)."""
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    sys.path.insert(0, str(root / "scripts"))
    try:
        import generate_changes
    finally:
        sys.path.pop(0)
    formatted = subprocess.run(
        [str(Path(sys.executable).with_name("ruff")), "format", "-"],
        input=generate_changes.source(),
        capture_output=True,
        text=True,
        check=True,
        cwd=root,
    ).stdout
    assert formatted == (root / "pipeline" / "state" / "changes.py").read_text()


@given(reachable_states())
def test_copies_equal_attrs_evolve(state: PipelineState) -> None:
    """progress_with / intake_with / ledger_with give what attrs.evolve gives, with or without
    changes."""
    progress, intake, ledger = state.progress, state.intake, state.ledger
    assert progress_with(progress) == progress
    assert intake_with(intake) == intake
    assert ledger_with(ledger) == ledger
    assert intake_with(intake, consecutive_malformed=2, feedback=()) == attrs.evolve(
        intake, consecutive_malformed=2, feedback=()
    )
    assert progress_with(progress, iteration=7, fixing=True) == attrs.evolve(
        progress, iteration=7, fixing=True
    )
    assert ledger_with(ledger, commits=3, last_error=None) == attrs.evolve(
        ledger, commits=3, last_error=None
    )


@given(reachable_states())
def test_build_state_equals_the_constructor(state: PipelineState) -> None:
    """The descriptor-based builder makes the same frozen object the class would."""
    fields = [getattr(state, f.name) for f in attrs.fields(PipelineState)]
    built = build_state(*fields)
    assert built == PipelineState(*fields)
    assert type(built) is PipelineState


def test_a_built_state_is_still_frozen() -> None:
    """Building through the slot descriptors does not open the class to mutation."""
    import pytest

    built = build_state(*[getattr(PipelineState(), f.name) for f in attrs.fields(PipelineState)])
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        built.sequence = 5  # type: ignore[misc]


def test_the_copied_records_have_no_validators_or_init_hooks_to_skip() -> None:
    """The copies set slots directly, skipping __init__: safe only while the records validate
    nothing and have no post-init hook. A validator added later must fail here first."""
    import attrs

    from pipeline.state import Intake, Ledger, Progress

    for cls in (Progress, Intake, Ledger):
        assert all(f.validator is None and f.converter is None for f in attrs.fields(cls)), cls
        assert not hasattr(cls, "__attrs_post_init__"), cls
