"""The in-memory event store passes the same contract as the SQL stores."""

from __future__ import annotations

import pytest

from pipeline.handlers.store import MemoryEventStore, MemoryStorage
from tests.handlers.store.contract import EventStoreContract, StoreFactory


class TestMemoryEventStore(EventStoreContract):
    """The shared contract, each handle on one shared storage (as connections on a database)."""

    @pytest.fixture
    def make_store(self) -> StoreFactory:
        storage = MemoryStorage()
        return lambda: MemoryEventStore(storage)
