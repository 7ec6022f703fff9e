"""Every number an event or effect carries is bounded at construction, and the registered
hypothesis strategies stay inside those bounds (a number out of 64 bits crashed the codec)."""

from __future__ import annotations

import typing
from collections.abc import Callable
from datetime import UTC, datetime
from typing import get_args

import attrs
import pytest
from hypothesis import given

from pipeline.app.testing import effects, events
from pipeline.core.effects import Effect, EffectId, RestorePromptPermissions
from pipeline.core.serialization import encode_effect, encode_event
from pipeline.events import (
    AgentName,
    Count,
    Digest,
    DurationMs,
    ExitCode,
    Instant,
    InvocationSucceeded,
    LogPosition,
    PipelineEvent,
    PromptFileProtected,
    Role,
    RunResumed,
)

_NUMBERS = (int, float)


def _numeric_fields(cls: type) -> list[str]:
    """The fields of ``cls`` whose type is a number (NewTypes of int and float included)."""
    hints = typing.get_type_hints(cls)
    found = []
    for field in attrs.fields(cls):
        kinds = get_args(hints[field.name]) or (hints[field.name],)
        for kind in kinds:
            base = getattr(kind, "__supertype__", kind)
            if base in _NUMBERS and base is not bool:
                found.append(field.name)
                break
    return found


_CLASSES = [*get_args(PipelineEvent), *get_args(Effect)]


@pytest.mark.parametrize("cls", _CLASSES, ids=lambda cls: cls.__name__)
def test_every_number_of_every_event_and_effect_has_a_validator(cls: type) -> None:
    """No numeric field is left unbounded: a value outside 64 bits cannot be constructed."""
    unchecked = [
        name
        for name in _numeric_fields(cls)
        if attrs.fields_dict(cls)[name].validator is None  # type: ignore[arg-type]
    ]
    assert unchecked == [], f"{cls.__name__}: {unchecked} have no bound"


@pytest.mark.parametrize(
    "build",
    [
        lambda: RestorePromptPermissions(
            effect_id=EffectId("r:1"), path="PROMPT.md", mode=Count(-(2**63) - 1)
        ),
        lambda: RestorePromptPermissions(
            effect_id=EffectId("r:1"), path="PROMPT.md", mode=Count(0o10000)
        ),
    ],
)
def test_a_file_mode_outside_chmods_bits_is_refused(build: Callable[[], object]) -> None:
    """The mode hypothesis found crashing the codec is refused when the effect is made."""
    with pytest.raises(ValueError, match="file mode"):
        build()


def test_out_of_range_exit_codes_and_sequences_are_refused() -> None:
    """An exit code and a checkpoint sequence are bounded too (both reach the wire)."""
    at = Instant(datetime(2026, 1, 1, tzinfo=UTC))
    with pytest.raises(ValueError, match="checkpoint_sequence"):
        RunResumed(checkpoint_sequence=LogPosition(-1), at=at)
    with pytest.raises(ValueError, match="exit_code"):
        InvocationSucceeded(
            role=Role.DEVELOPER,
            agent=AgentName("a"),
            exit_code=ExitCode(2**63),
            duration_ms=DurationMs(1),
            output_digest=Digest("0" * 64),
            at=at,
        )


@given(effects())
def test_every_generated_effect_fits_the_wire(effect: Effect) -> None:
    """The strategies stay inside the validators' bounds, and orjson can encode all of it."""
    encode_effect(effect)


@given(events())
def test_every_generated_event_fits_the_wire(event: PipelineEvent) -> None:
    """Likewise for events; a file mode stays within chmod's bits."""
    encode_event(event)
    if isinstance(event, PromptFileProtected):
        assert 0 <= event.original_mode <= 0o7777
