"""A throwaway PostgreSQL server for tests and benchmarks (needs the server binaries and the
``postgres`` extra): initdb + pg_ctl in a temporary directory, listening on a free port of
127.0.0.1, stopped (and its files removed) at the end.

``with postgres_server(find_binaries()) as server: url = server.new_database()`` gives each
test its own empty database. As root, the server runs as the ``postgres`` user (Debian's
package creates it), since PostgreSQL refuses to run as root.
"""

from __future__ import annotations

import contextlib
import glob
import os
import shutil
import socket
import subprocess
import tempfile
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, ClassVar

import psycopg
from attrs import frozen

__all__ = ["PostgresServer", "find_binaries", "postgres_server"]


def find_binaries() -> Path | None:
    """The directory holding ``initdb`` and ``pg_ctl`` (PATH first, then Debian's
    ``/usr/lib/postgresql/<version>/bin``), or None when there is none."""
    initdb = shutil.which("initdb")
    if initdb is not None and shutil.which("pg_ctl") is not None:
        return Path(os.path.realpath(initdb)).parent
    for found in sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), reverse=True):
        return Path(found).parent
    return None


_PORT_ATTEMPTS = 5
"""How many free ports the server is started on before its start is a failure."""


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


@frozen(kw_only=True)
class PostgresServer:
    """A running server: where it listens, how to make a fresh database on it, and how to
    take it down and bring it back (to test what clients do meanwhile)."""

    USER: ClassVar[str] = "ralph"
    """The superuser initdb makes, whom every test connects as."""

    port: int
    _control: Callable[[str], None]
    user: str = USER

    def url(self, database: str = "postgres") -> str:
        """The connection URL of ``database`` on this server."""
        return f"postgresql://{self.user}@127.0.0.1:{self.port}/{database}"

    def new_database(self) -> str:
        """Create an empty database with a unique name; its URL."""
        name = f"t_{uuid.uuid4().hex[:16]}"
        with psycopg.connect(self.url(), autocommit=True) as admin:
            admin.execute(f"CREATE DATABASE {name}")
        return self.url(name)

    def stop(self) -> None:
        """Stop the server at once (clients' connections drop); :meth:`start` brings it back
        on the same port with the same data."""
        self._control("stop")

    def start(self) -> None:
        """Start the server again after :meth:`stop` (waits until it accepts connections)."""
        self._control("start")


@contextmanager
def postgres_server(binaries: Path, *, durable: bool = False) -> Iterator[PostgresServer]:
    """Start a server from ``binaries``; stop it and remove its files afterwards.

    Not ``durable`` (for tests), it never syncs to disk; ``durable`` (for benchmarks), it
    syncs as a production server does.
    """
    as_root = os.geteuid() == 0
    base = Path(tempfile.mkdtemp(prefix="ralph-pg-"))
    prefix: list[str] = []
    if as_root:
        shutil.chown(base, "postgres", "postgres")
        prefix = ["runuser", "-u", "postgres", "--"]
    data, log = base / "data", base / "server.log"
    settings = f"-k {base} -c listen_addresses=127.0.0.1 -c max_connections=200"
    if not durable:
        # A test server: what matters is the protocol, not surviving a power cut.
        settings += " -c fsync=off -c full_page_writes=off"
    port = 0

    def run(*command: str) -> None:
        subprocess.run([*prefix, *command], check=True, capture_output=True, timeout=120)

    def control(action: str) -> None:
        pg_ctl = [str(binaries / "pg_ctl"), "-D", str(data)]
        if action == "start":
            run(*pg_ctl, "-o", f"-p {port} {settings}", "-l", str(log), "-w", "start")
        else:
            run(*pg_ctl, "-m", "immediate", "-w", "stop")

    try:
        run(
            str(binaries / "initdb"),
            "-D",
            str(data),
            "-U",
            PostgresServer.USER,
            "--auth=trust",
            "-E",
            "UTF8",
            "--no-sync",
        )
        # The port is free when asked for, but the server binds it only seconds later: a
        # process started meanwhile (another test process's server, a browser) may have
        # taken it. Then another port, a few times.
        for attempt in range(_PORT_ATTEMPTS):
            port = _free_port()
            try:
                control("start")
                break
            except subprocess.CalledProcessError:
                said = log.read_text(errors="replace") if log.exists() else ""
                if "could not bind" not in said or attempt == _PORT_ATTEMPTS - 1:
                    raise
                log.unlink()
        server = PostgresServer(port=port, control=control)
        try:
            yield server
        finally:
            with contextlib.suppress(subprocess.CalledProcessError):
                control("stop")
    except subprocess.CalledProcessError as error:
        detail = error.stderr.decode(errors="replace") if error.stderr else ""
        if log.exists():
            detail += log.read_text(errors="replace")
        raise RuntimeError(f"the test PostgreSQL server failed: {detail}") from error
    finally:
        shutil.rmtree(base, ignore_errors=True)


def schema_at(conn: psycopg.Connection[Any], version: int) -> None:
    """Lay the event store's first ``version`` migrations into ``conn``'s empty database, as
    the release that stopped there left it (to test what opening it with this one does)."""
    from pipeline.handlers.store._pg_migrations import PG_MIGRATIONS, procrastinate_schema

    conn.execute(
        "CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, "
        "name TEXT NOT NULL, applied_at TIMESTAMPTZ NOT NULL DEFAULT now())"
    )
    for number, name, sql in PG_MIGRATIONS[:version]:
        if number == 13:  # the run queue moves to procrastinate's schema, laid just before
            conn.execute(procrastinate_schema().encode())
        conn.execute(sql.encode())
        conn.execute(
            "INSERT INTO schema_migrations (version, name) VALUES (%s, %s)", (number, name)
        )
