"""Projections: tables a store keeps from its log, written in the transaction of each append.

A store is made with its projections (:data:`DEFAULT_PROJECTIONS` unless told otherwise); the
port's ``append`` never names them. Each projection says which table it fills and turns one
appended event, with the run's state folded before and after it, into rows, and the store
writes them in its own dialect, so a projection is declared once for SQLite, PostgreSQL and
memory. Its table is made by the stores' migrations. A projection that keeps one row per run
(a run's summary) names its ``key``: the row is replaced at each append rather than added,
and makes it of the run's state after the append (``at_head``), once per append rather than
once per event.

The states come from the one fold of the facts: the engine folds them before it appends
(nothing acts on them until they are stored) and hands the store a :class:`Folded`, a plain
sequence of events that also carries the states, so the facts are folded once. Events
appended as any other sequence are folded by the store from the run's state, loaded from its
log.

I/O only through the store it is given, to load the state of a run it holds no fold of (as a
resume loads it: the newest checkpoint, then the events after it).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any, Final, Protocol, final

import orjson

from pipeline.core.serialization import CheckpointError, checkpoint_state
from pipeline.core.state import PipelineState
from pipeline.events import PipelineEvent, RunId
from pipeline.reducers import reduce
from pipeline.reducers.views import LoggedStatus, ResponseLogRow, response_row

if TYPE_CHECKING:
    from pipeline.handlers.store._port import RunStore

__all__ = [
    "DEFAULT_PROJECTIONS",
    "RESPONSE_LOG",
    "Folded",
    "Projected",
    "Projection",
    "ResponseLog",
    "conflict_sql",
    "project",
    "rebuilt",
    "upsert_sql",
]

Row = tuple[Any, ...]


class Projection(Protocol):
    """A table kept from the log: its name, its columns (the first is ``run_id``), the columns
    of its key (empty: every row is added; else a row replaces the one with its key), the
    column it is read back in order of, the rows an event makes and those the run's state
    after an append makes."""

    @property
    def table(self) -> str:
        """The table's name (a constant of the projection, never built from input)."""
        ...

    @property
    def columns(self) -> tuple[str, ...]:
        """The columns a row writes, in order; the first is ``run_id``."""
        ...

    @property
    def key(self) -> tuple[str, ...]:
        """The columns that name a row to replace (empty: rows are only added)."""
        ...

    @property
    def order(self) -> str:
        """The column the rows of a run are read back in order of."""
        ...

    def rows(
        self, run_id: RunId, before: PipelineState, event: PipelineEvent, after: PipelineState
    ) -> Iterable[Row]:
        """The rows ``event`` makes, folded from ``before`` into ``after`` (often none)."""
        ...

    def at_head(self, run_id: RunId, state: PipelineState) -> Iterable[Row]:
        """The rows of the run's ``state`` after the events of an append (a summary as of
        its head; none for a projection of the events alone)."""
        ...


class Projected(Protocol):
    """A store that keeps projections (the adapters; not part of the port): their rows read
    back, and rebuilt from the log."""

    def projected(self, projection: Projection, run_id: RunId) -> list[Row]:
        """The run's rows of ``projection``'s table, in its order."""
        ...

    def rebuild_projections(self) -> int:
        """Recreate every projection's table from the events of every run (one
        transaction); the number of rows written."""
        ...


@final
class ResponseLog:
    """The ``agent_response_log``: one row per structured response a run took
    (:func:`~pipeline.reducers.views.response_row`)."""

    table: Final = "agent_response_log"
    columns: Final = (
        "run_id",
        "task_id",
        "turn_number",
        "raw_response",
        "status",
        "violations",
        "correction_attempt",
        "timestamp",
    )
    key: Final[tuple[str, ...]] = ()
    order: Final = "id"

    def rows(
        self, run_id: RunId, before: PipelineState, event: PipelineEvent, after: PipelineState
    ) -> Iterable[Row]:
        """The row of a response the run took (none for any other event)."""
        row = response_row(before, event, after)
        if row is None:
            return ()
        return (
            (
                run_id,
                row.task_id,
                row.turn_number,
                row.raw_response,
                row.status.value,
                orjson.dumps(list(row.violations)).decode(),
                row.correction_attempt,
                row.timestamp,
            ),
        )

    def at_head(self, run_id: RunId, state: PipelineState) -> Iterable[Row]:
        """None: the log has a row per response, not a summary."""
        return ()

    @staticmethod
    def read(store: Projected, run_id: RunId) -> list[ResponseLogRow]:
        """The run's rows as ``store`` keeps them, in order."""
        return [
            ResponseLogRow(
                task_id=row[1],
                turn_number=int(row[2]),
                raw_response=row[3],
                status=LoggedStatus(row[4]),
                violations=tuple(orjson.loads(row[5])),
                correction_attempt=int(row[6]),
                timestamp=row[7],
            )
            for row in store.projected(RESPONSE_LOG, run_id)
        ]


RESPONSE_LOG: Final = ResponseLog()
"""The agent response log, as every store keeps it by default."""

DEFAULT_PROJECTIONS: Final[tuple[Projection, ...]] = (RESPONSE_LOG,)
"""The projections a store is made with unless told otherwise (add one here, with the
migrations that make its table, to have every store keep it)."""


class Folded(tuple[PipelineEvent, ...]):
    """Facts with the run's state before them (``before``) and after each (``states``): the
    fold the engine makes of them, so a store's projections take their rows from it instead
    of folding the facts again. To any store, a plain sequence of the facts."""

    before: PipelineState
    states: tuple[PipelineState, ...]

    def __new__(cls, before: PipelineState, facts: Iterable[PipelineEvent]) -> Folded:
        folded = super().__new__(cls, facts)
        folded.before = before
        state, states = before, []
        for fact in folded:
            state = reduce(state, fact)
            states.append(state)
        folded.states = tuple(states)
        return folded

    @property
    def after(self) -> PipelineState:
        """The state after the last fact (``before`` when there is none)."""
        return self.states[-1] if self.states else self.before


def project(
    projections: Sequence[Projection],
    run_id: RunId,
    expected: int,
    events: Sequence[PipelineEvent],
    log: RunStore,
) -> dict[str, list[Row]]:
    """The rows each of ``projections`` gets from ``events`` appended after ``expected``
    events, by table. Events that come :class:`Folded` from ``expected`` bring their states
    (the engine's appends); others are folded from the state before them, loaded from ``log``
    as a resume loads it: the newest checkpoint at or before ``expected`` that verifies, and
    the events after it up to ``expected`` (a log that holds more makes the append a conflict
    anyway)."""
    if not projections:
        return {}
    if isinstance(events, Folded) and events.before.sequence == expected:
        folded = events
    else:
        folded = Folded(_state(log, run_id, expected), events)
    tables: dict[str, list[Row]] = {p.table: [] for p in projections}
    before = folded.before
    for event, after in zip(folded, folded.states, strict=True):
        for projection in projections:
            tables[projection.table].extend(projection.rows(run_id, before, event, after))
        before = after
    for projection in projections:
        tables[projection.table].extend(projection.at_head(run_id, folded.after))
        if projection.key:
            tables[projection.table] = _last_per_key(projection, tables[projection.table])
    return tables


def rebuilt(
    projections: Sequence[Projection], run_id: RunId, log: RunStore
) -> dict[str, list[Row]]:
    """Every row of the run's whole log, by table (a rebuild)."""
    return project(projections, run_id, 0, list(log.read(run_id)), log)


def _state(log: RunStore, run_id: RunId, expected: int) -> PipelineState:
    """The run's state after ``expected`` events: its newest usable checkpoint at or before
    them, and the fold of the events after it (a checkpoint that fails to verify is passed
    over; the runner reports it when it resumes)."""
    state = PipelineState()
    if not expected:
        return state
    for checkpoint in log.checkpoints(run_id):
        if checkpoint.sequence <= expected:
            try:
                state = checkpoint_state(checkpoint, f"checkpoint {checkpoint.sequence}")
            except CheckpointError:
                continue
            break
    for event in log.read(run_id, state.sequence):
        if state.sequence >= expected:
            break
        state = reduce(state, event)
    return state


def _last_per_key(projection: Projection, rows: list[Row]) -> list[Row]:
    """The last of ``rows`` with each key (one statement may not replace a row twice)."""
    at = [projection.columns.index(column) for column in projection.key]
    last = {tuple(row[i] for i in at): row for row in rows}
    return list(last.values())


def upsert_sql(projection: Projection, placeholder: str) -> str:
    """The statement that writes one row of ``projection`` (``placeholder``: ``?`` for
    SQLite, ``%s`` for PostgreSQL): added, or replacing the row with its key."""
    columns = ", ".join(projection.columns)
    values = ", ".join([placeholder] * len(projection.columns))
    return f"INSERT INTO {projection.table} ({columns}) VALUES ({values}){conflict_sql(projection)}"


def conflict_sql(projection: Projection) -> str:
    """What an insert of ``projection``'s rows does with a row whose key is kept already:
    replaces it (nothing when it has no key: rows are only added)."""
    if not projection.key:
        return ""
    updated = [c for c in projection.columns if c not in projection.key]
    sets = ", ".join(f"{c} = excluded.{c}" for c in updated)
    return f" ON CONFLICT ({', '.join(projection.key)}) DO UPDATE SET {sets}"
