"""Event stores: the port and its adapters (I/O)."""

from pipeline.handlers.store._location import NamedStore, open_store_at, store_path
from pipeline.handlers.store._memory import MemoryEventStore, MemoryStorage
from pipeline.handlers.store._port import (
    AnswerSource,
    AnswerTakenError,
    DamagedEventError,
    EventStore,
    LeaseLostError,
    RunSummary,
    SequenceConflictError,
    StoreCorruptError,
    StoredResponse,
    StoreError,
    StoreMissingError,
    StoreVanishedError,
    UnknownRunError,
)
from pipeline.handlers.store._sqlite import DEFAULT_STORE_PATH, SqliteEventStore

__all__ = [
    "DEFAULT_STORE_PATH",
    "AnswerSource",
    "AnswerTakenError",
    "DamagedEventError",
    "EventStore",
    "LeaseLostError",
    "MemoryEventStore",
    "MemoryStorage",
    "NamedStore",
    "RunSummary",
    "SequenceConflictError",
    "SqliteEventStore",
    "StoreCorruptError",
    "StoreError",
    "StoreMissingError",
    "StoreVanishedError",
    "StoredResponse",
    "UnknownRunError",
    "open_store_at",
    "store_path",
]
