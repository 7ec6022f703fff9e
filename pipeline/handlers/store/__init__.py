"""Event stores: the port and its adapters (I/O)."""

from pipeline.handlers.store._location import NamedStore, open_store_at, store_path
from pipeline.handlers.store._memory import MemoryEventStore, MemoryStorage
from pipeline.handlers.store._port import (
    AnswerBox,
    AnswerSource,
    AnswerTakenError,
    CheckpointCache,
    DamagedEventError,
    EventLog,
    EventStore,
    LeaseLostError,
    ResponseLogStore,
    RunStore,
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
    "AnswerBox",
    "AnswerSource",
    "AnswerTakenError",
    "CheckpointCache",
    "DamagedEventError",
    "EventLog",
    "EventStore",
    "LeaseLostError",
    "MemoryEventStore",
    "MemoryStorage",
    "NamedStore",
    "ResponseLogStore",
    "RunStore",
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
