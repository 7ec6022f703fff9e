"""A store that cannot be written: readers read it, writers say so (real ``ralph`` processes,
real read-only mounts made in a private mount namespace, a real PostgreSQL role that may only
SELECT)."""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import psycopg
import pytest

from pipeline.events import RunId
from pipeline.handlers.runtime import WorkspaceLayout
from pipeline.handlers.store import StoreError
from pipeline.handlers.store.postgres import PostgresEventStore
from tests.handlers.store.contract import topics
from tests.runtime.workspace import RALPH, ROOT, in_mount_namespace, ralph

pytestmark = pytest.mark.slow  # whole runs in subprocesses: seconds a test

_READERS = (
    ("status", "--store"),
    ("replay", "--verify"),
    ("events",),
    ("report", "--markdown", "-"),
    ("runs",),
)


def _can_mount_read_only(tmp_path: Path) -> str | None:
    """Why a read-only bind mount cannot be made here (None: it can)."""
    if shutil.which("unshare") is None:
        return "no unshare(1) on this machine"
    probe = tmp_path / "probe"
    probe.mkdir()
    made = subprocess.run(
        ["unshare", "-rm", "sh", "-c", f"mount --bind -o ro {probe} {probe} && touch {probe}/x"],
        capture_output=True,
        text=True,
        check=False,
    )
    if "Read-only file system" not in made.stderr:
        return f"no read-only bind mount in a user namespace here ({made.stderr.strip()})"
    return None


def under_read_only(folder: Path, args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    """``ralph ARGS`` run in ``cwd`` while ``folder`` is mounted read-only (for it alone)."""
    mounted = shlex.quote(str(folder))
    command = shlex.join([*RALPH, *args])
    return in_mount_namespace(f"mount --bind -o ro {mounted} {mounted} && {command}", cwd, 120)


@pytest.fixture
def read_only_mounts(tmp_path: Path) -> None:
    """Skip, with the reason, where this machine cannot mount read-only."""
    why = _can_mount_read_only(tmp_path)
    if why is not None:
        pytest.skip(why)


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The workspace of one demo run."""
    base = tmp_path_factory.mktemp("demo")
    assert ralph("demo", "run", cwd=base).returncode == 0
    return base / "run"


@pytest.mark.usefixtures("read_only_mounts")
def test_every_reader_works_on_a_read_only_mount(demo: Path, tmp_path: Path) -> None:
    """The whole workspace on a read-only mount, no -wal/-shm beside the store (SQLite's
    reader cannot create them there): status, replay --verify, events, report and runs all
    read it (they failed "unable to open database file")."""
    workspace = tmp_path / "ws"
    shutil.copytree(demo, workspace, symlinks=True)
    store = WorkspaceLayout(root=workspace).store
    assert not store.with_name(store.name + "-wal").exists()
    before = store.read_bytes()
    for reader in _READERS:
        result = under_read_only(workspace, [*reader, str(store)], workspace)
        assert result.returncode == 0, (reader, result.stdout, result.stderr)
    assert store.read_bytes() == before


def _writer_killed_before_its_checkpoint(path: Path) -> int:
    """A store whose last facts are only in its -wal: a writer appended, then died without
    closing (so SQLite never checkpointed the log into the file). Returns the events held."""
    script = (
        "import os\n"
        "from pipeline.events import RunId\n"
        "from pipeline.handlers.store import SqliteEventStore\n"
        "from tests.handlers.store.contract import topics\n"
        f"store = SqliteEventStore({str(path)!r})\n"
        "store.append(RunId('r'), 0, topics(30))\n"
        "os._exit(0)\n"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    subprocess.run([sys.executable, "-c", script], check=True, env=env, cwd=ROOT)
    assert path.with_name(path.name + "-wal").stat().st_size > 0
    return 30


@pytest.mark.usefixtures("read_only_mounts")
def test_facts_only_in_the_write_ahead_log_are_read_on_a_read_only_mount(
    tmp_path: Path,
) -> None:
    """A read-only place holding a store and a -wal its writer never checkpointed: the
    reader sees every fact (opening the file as immutable would miss the log's), and the
    mounted files stay as they were."""
    folder = tmp_path / "stores"
    folder.mkdir()
    store = folder / "pipeline.db"
    held = _writer_killed_before_its_checkpoint(store)
    # Without its -shm index (a copy of the store and its log): SQLite's reader cannot
    # rebuild one on the mount, and the file alone lacks the log's facts.
    store.with_name(store.name + "-shm").unlink()
    wal = store.with_name(store.name + "-wal").read_bytes()
    result = under_read_only(folder, ["events", str(store), "--run", "r"], tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout.count("topic=t.") == held, result.stdout
    assert store.with_name(store.name + "-wal").read_bytes() == wal


@pytest.mark.usefixtures("read_only_mounts")
def test_a_writer_on_a_read_only_store_says_so(demo: Path, tmp_path: Path) -> None:
    """``ralph run --store`` on a read-only mount: the store-error exit (4), one message that
    says the store is read-only and that readers still work; nothing written."""
    folder = tmp_path / "stores"
    folder.mkdir()
    store = folder / "pipeline.db"
    shutil.copy(WorkspaceLayout(root=demo).store, store)
    before = store.read_bytes()
    result = under_read_only(
        folder, ["run", "-p", "hi", "--store", str(store), "--allow-dirty"], demo
    )
    assert result.returncode == 4, (result.stdout, result.stderr)
    assert "the store is read-only here" in result.stderr
    assert "Traceback" not in result.stderr
    assert store.read_bytes() == before


def test_a_postgresql_reader_may_only_select(postgres_url: str) -> None:
    """A reader's session is read-only (a write through it fails in the server), it never
    migrates, and a role granted SELECT alone reads the log with it."""
    with PostgresEventStore(postgres_url) as writer:
        writer.append(RunId("r"), 0, topics(3))
    reader = PostgresEventStore(postgres_url, read_only=True)
    try:
        assert list(reader.read(RunId("r"))) == topics(3)
        with pytest.raises(StoreError, match="read-only transaction"):
            reader.append(RunId("r"), 3, topics(1, start=3))
    finally:
        reader.close()
    with psycopg.connect(postgres_url, autocommit=True) as admin:
        admin.execute("DROP ROLE IF EXISTS looker")
        admin.execute("CREATE ROLE looker LOGIN PASSWORD 'look'")
        admin.execute("GRANT SELECT ON ALL TABLES IN SCHEMA public TO looker")
        database = admin.info.dbname
        host, port = admin.info.host, admin.info.port
    url = f"postgresql://looker:look@{host}:{port}/{database}"
    with PostgresEventStore(url, read_only=True) as looker:
        assert [r.run_id for r in looker.runs()] == ["r"]
        assert len(list(looker.read(RunId("r")))) == 3
    result = subprocess.run(
        [*RALPH, "events", url, "--run", "r"],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.count("topic=t.") == 3
