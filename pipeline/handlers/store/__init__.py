"""Event stores: the port and its adapters (I/O).

Its names are imported on first use, so that a command that needs one store module (the lean
``ralph status`` reads the hash chain's ``link``) does not load every store, the events and
the converter."""

from pipeline.handlers._lazy import lazy_names

# ``typing`` is imported for the type checker only, as in ``pipeline.handlers``.
TYPE_CHECKING = False

if TYPE_CHECKING:
    from pipeline.handlers.store._location import NamedStore, open_store_at, store_path
    from pipeline.handlers.store._memory import MemoryEventStore, MemoryStorage
    from pipeline.handlers.store._messages import (
        answer_to,
        file_notes,
        give_answer,
        give_guidance,
        notes_after,
    )
    from pipeline.handlers.store._port import (
        AnswerTakenError,
        DamagedEventError,
        EventLog,
        EventStore,
        Inbox,
        LeaseLostError,
        Letter,
        Message,
        MessageKind,
        RunStore,
        RunSummary,
        SequenceConflictError,
        StoreCorruptError,
        StoreError,
        StoreMissingError,
        StoreVanishedError,
        UnknownRunError,
    )
    from pipeline.handlers.store._projection import (
        DEFAULT_PROJECTIONS,
        RESPONSE_LOG,
        Folded,
        Projected,
        Projection,
        ResponseLog,
    )
    from pipeline.handlers.store._sqlite import DEFAULT_STORE_PATH, SqliteEventStore

__all__ = [
    "DEFAULT_PROJECTIONS",
    "DEFAULT_STORE_PATH",
    "RESPONSE_LOG",
    "AnswerTakenError",
    "DamagedEventError",
    "EventLog",
    "EventStore",
    "Folded",
    "Inbox",
    "LeaseLostError",
    "Letter",
    "MemoryEventStore",
    "MemoryStorage",
    "Message",
    "MessageKind",
    "NamedStore",
    "Projected",
    "Projection",
    "ResponseLog",
    "RunStore",
    "RunSummary",
    "SequenceConflictError",
    "SqliteEventStore",
    "StoreCorruptError",
    "StoreError",
    "StoreMissingError",
    "StoreVanishedError",
    "UnknownRunError",
    "answer_to",
    "file_notes",
    "give_answer",
    "give_guidance",
    "notes_after",
    "open_store_at",
    "store_path",
]

__getattr__ = lazy_names(__name__, globals())
