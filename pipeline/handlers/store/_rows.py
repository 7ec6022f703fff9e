"""What the SQL stores share: decoding an event row (with the verdicts old structured
responses need), checking its place in the log, and the migrations a store lacks (refusing a
schema from a newer release)
(I/O-free helpers of the adapters)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from pipeline import WireFormatError
from pipeline.core.serialization import decode_stored_event
from pipeline.events import (
    SCHEMA_VERSION,
    Json,
    LoopPolicy,
    PipelineEvent,
    Role,
    RunStarted,
)
from pipeline.handlers.responses import classify
from pipeline.handlers.store._port import (
    DamagedEventError,
    StoreError,
)

__all__ = [
    "LegacyVerdicts",
    "check_sequence",
    "decode_row",
    "unapplied",
]


def check_sequence(sequence: int, expected: int, log: str) -> None:
    """Raise :class:`DamagedEventError` unless the row read next is event ``expected``: a
    missing or reordered row is damage, never a log that silently folds without it."""
    if sequence != expected:
        raise DamagedEventError(
            f"{log}: the event store is damaged: event {expected} is missing (the next stored "
            f"one is {sequence}; the last good position is {expected} events; the store was "
            "left untouched: restore it from a backup)"
        )


_ROLES = frozenset(role.value for role in Role)
_ANY = Json.of(True)


class LegacyVerdicts:
    """The verdicts of one run's structured responses written before schema 8, which left
    judging to the reducer: each is judged once, on read, against the schema the run started
    with. ``first`` fetches the run's first event when the read starts later than it."""

    def __init__(self, first: Callable[[], PipelineEvent | None] | None) -> None:
        self._first = first
        self._loop: LoopPolicy | None = None

    def saw(self, event: PipelineEvent) -> None:
        """Remember the run's loop policy (its response schemas) from its start."""
        if isinstance(event, RunStarted):
            self._loop = event.loop

    def __call__(self, role: str, raw: str) -> tuple[str, tuple[str, ...]]:
        if self._loop is None and self._first is not None:
            # A damaged start raises here, named as such: no verdict is made without the schema.
            started = self._first()
            self._first = None
            if started is not None:
                self.saw(started)
        hat = None
        if self._loop is not None and role in _ROLES:
            hat = self._loop.hat(Role(role))
        # A response no hat asked for was an anomaly when folded; any verdict keeps it one.
        schema = _ANY if hat is None or hat.response_schema is None else hat.response_schema
        verdict = classify(raw, schema)
        return verdict.status.value, verdict.problems


def decode_row(
    body: bytes | str,
    version: int,
    log: str,
    sequence: int,
    legacy: LegacyVerdicts | None = None,
) -> PipelineEvent:
    """The event a row stores. A row this release cannot read because a newer one wrote it
    raises :class:`WireFormatError`; any other bad row is damage: :class:`DamagedEventError`
    naming it as event ``sequence`` of ``log`` (the store and the run) and the last good
    position. The name is made only then: formatting one per row slowed a replay by about a
    tenth."""
    try:
        event = decode_stored_event(body, version, judge=legacy)
    except DamagedEventError:
        raise  # another row, read to judge this one, is damaged: that one is named
    except (WireFormatError, UnicodeDecodeError):
        pass
    else:
        if legacy is not None and version < SCHEMA_VERSION:
            legacy.saw(event)
        return event
    try:
        # Decoding again, with the row's name, raises the same error worded for people.
        return decode_stored_event(body, version, f"{log} event {sequence}", legacy)
    except DamagedEventError:
        raise
    except (WireFormatError, UnicodeDecodeError) as error:
        if version > SCHEMA_VERSION:
            raise
        raise DamagedEventError(
            f"the event store is damaged: {error} (the last good position is {sequence} "
            f"events of {log}; the store was left untouched: restore it from a backup, or "
            "salvage the good events with ralph salvage)"
        ) from error


def unapplied(
    label: str, migrations: Sequence[tuple[int, str, str]], applied: set[int]
) -> list[tuple[int, str, str]]:
    """The ``migrations`` (number, name, SQL) the store ``label`` lacks, in order; a
    :class:`StoreError` when it has migrations this release does not know (a newer release
    wrote it), before anything touches it."""
    known = {version for version, _, _ in migrations}
    if unknown := sorted(applied - known):
        raise StoreError(
            f"{label}: the store has schema migrations {unknown} from a newer release "
            f"(this release knows up to {max(known)}); it was left untouched"
        )
    return [migration for migration in migrations if migration[0] not in applied]
