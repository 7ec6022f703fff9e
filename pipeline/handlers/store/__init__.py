"""Event stores: the port and its adapters (I/O)."""

from pipeline.handlers.store._port import (
    EventStore,
    LeaseLostError,
    RunSummary,
    SequenceConflictError,
    StoreCorruptError,
    StoredResponse,
    StoreError,
    UnknownRunError,
)
from pipeline.handlers.store._sqlite import DEFAULT_STORE_PATH, SqliteEventStore

__all__ = [
    "DEFAULT_STORE_PATH",
    "EventStore",
    "LeaseLostError",
    "RunSummary",
    "SequenceConflictError",
    "SqliteEventStore",
    "StoreCorruptError",
    "StoreError",
    "StoredResponse",
    "UnknownRunError",
]
