"""The in-memory event store passes the same contract as the SQL stores."""

from __future__ import annotations

from typing import Any

import pytest

from pipeline.handlers.store import MemoryEventStore, MemoryStorage
from tests.handlers.store.contract import EventStoreContract, MakeTable, StoreFactory


class TestMemoryEventStore(EventStoreContract):
    """The shared contract, each handle on one shared storage (as connections on a database)."""

    @pytest.fixture
    def make_store(self) -> StoreFactory:
        storage = MemoryStorage()

        def make(**options: Any) -> MemoryEventStore:
            return MemoryEventStore(storage, **options)

        return make

    @pytest.fixture
    def make_table(self) -> MakeTable:
        def make(_sql: str) -> None:
            """Nothing to make: memory keeps any table a projection names."""

        return make
