"""How a store URL starts: shared by the configuration, which checks a ``[store] url``, and
the stores, which open one (a module of its own so that opening a store does not load the
whole configuration: a read command pays for what it reads).
"""

from typing import Final

__all__ = ["POSTGRES_SCHEMES", "SQLITE_SCHEME"]

POSTGRES_SCHEMES: Final = ("postgresql://", "postgres://")
"""How a PostgreSQL store URL starts."""
SQLITE_SCHEME: Final = "sqlite:///"
"""How a SQLite store URL starts (a plain path names a SQLite file too)."""
