"""A disk that fills under a run: the run stops with the store-error exit, naming the file and
saying the disk is full, leaves no temporary file behind, and resumes to its end once there is
room, every commit made once (a real ``ralph demo`` under a file size limit: SQLite's writes
fail as they would on a full disk)."""

from __future__ import annotations

import shlex
import shutil
import time
from pathlib import Path

import pytest

from pipeline.engine import load_state
from pipeline.handlers.runtime import WorkspaceLayout
from pipeline.handlers.store import SqliteEventStore
from tests.faults.commits import commits_in_git
from tests.runtime.workspace import (
    FINISH_EVERYTHING,
    RALPH,
    in_mount_namespace,
    make_workspace,
    ralph,
    ralph_on_a_full_disk,
    scripted,
    start_ralph,
)

pytestmark = pytest.mark.slow  # whole runs in subprocesses: seconds a test

_LIMIT = 150_000
"""Bytes any file of the run may grow to: the store's write-ahead log passes it mid-run."""


def test_a_full_disk_stops_the_run_cleanly_and_it_resumes_once_there_is_room(
    tmp_path: Path,
) -> None:
    """Exit 4 with the file and the cause named, no traceback, no ``*.tmp`` left; then a
    resume completes, ``replay --verify`` agrees with git, and no step was committed twice."""
    stopped = ralph_on_a_full_disk("demo", "run", cwd=tmp_path, limit_bytes=_LIMIT, timeout=300)
    root = tmp_path / "run"
    store = WorkspaceLayout(root=root).store
    assert stopped.returncode == 4, (stopped.stdout[-2000:], stopped.stderr)
    assert str(store) in stopped.stderr
    assert "the disk is full" in stopped.stderr
    assert "Traceback" not in stopped.stderr
    assert "Exit status 0" not in stopped.stdout
    assert sorted(p.name for p in tmp_path.rglob("*.tmp")) == []

    resumed = ralph("resume", "--plain", cwd=root, timeout=300)
    assert resumed.returncode == 0, resumed.stdout[-2000:] + resumed.stderr
    assert "Exit status 0: completed" in resumed.stdout
    verified = ralph("replay", "--verify", cwd=root)
    assert verified.returncode == 0, verified.stdout + verified.stderr
    effects = [effect for _sha, effect in commits_in_git(root)]
    assert effects, "the run committed nothing"
    assert len(effects) == len(set(effects)), effects


def test_a_store_on_a_full_tmpfs_stops_the_run_saying_so(tmp_path: Path) -> None:
    """A real ENOSPC: the store on a 256 KiB tmpfs (mounted in a private mount namespace,
    where the machine allows it): exit 4, the disk named full, nothing left half-written."""
    if shutil.which("unshare") is None:
        pytest.skip("no unshare(1) on this machine")
    root = make_workspace(
        tmp_path / "ws", scripts={"s.toml": FINISH_EVERYTHING}, agents={"main": scripted("s.toml")}
    )
    small = tmp_path / "small"
    small.mkdir()
    store = small / "pipeline.db"
    filler = small / "filler"
    run = shlex.join([*RALPH, "run", "--plain", "--store", str(store)])
    script = (
        f"mount -t tmpfs -o size=256k tmpfs {shlex.quote(str(small))} || exit 99; "
        # Fill all but about 160 KiB: the store and its schema fit, the run's log soon not.
        f"head -c 90k /dev/zero > {shlex.quote(str(filler))}; {run}; "
        f"echo exit=$?; ls -a {shlex.quote(str(small))}"
    )
    done = in_mount_namespace(script, root)
    if done.returncode == 99:
        pytest.skip(f"no tmpfs mount in a user namespace here: {done.stderr.strip()}")
    assert "exit=4" in done.stdout, (done.stdout[-2000:], done.stderr)
    # Mid-run, not at opening: an append of facts or a checkpoint hit the full disk.
    assert "could not append" in done.stderr or "could not save" in done.stderr
    assert "the disk is full" in done.stderr
    assert str(store) in done.stderr
    assert "Traceback" not in done.stderr
    assert ".tmp" not in done.stdout.split("exit=4")[-1]


ASKS = """
[[development]]
emit = [["human.interact", "Which database should I use?"]]
write.".agent/out/status" = "partial\\nasked"
write.".agent/out/issues.md" = ""
write.".agent/out/commit-message" = "Ask"
"""
"""A developer that asks a person a question (after the default step's plan)."""


def _asking(root: Path) -> tuple[str, str]:
    """Run ``root`` until its developer's question is asked, then kill -9 it: the run and the
    question it waits on, in its log."""
    process = start_ralph("run", cwd=root)
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if WorkspaceLayout(root=root).store.is_file():
                with SqliteEventStore(WorkspaceLayout(root=root).store) as store:
                    runs = store.runs()
                    if runs:
                        state, _ = load_state(store, runs[-1].run_id)
                        asked = state.ledger.pending_question
                        if asked is not None and asked.asked:
                            return runs[-1].run_id, asked.question_id
            time.sleep(0.1)
        raise AssertionError("no question was asked")
    finally:
        process.kill()
        process.communicate(timeout=30)


def test_every_command_that_writes_the_store_exits_4_on_a_full_disk(tmp_path: Path) -> None:
    """The store's folder a full tmpfs (a private mount namespace): ``respond``, ``guide``,
    ``memory add``, ``task add`` and ``abandon`` each exit 4 with one line saying the disk is
    full and no traceback, and the log is as it was (the question still waits, it verifies)."""
    if shutil.which("unshare") is None:
        pytest.skip("no unshare(1) on this machine")
    root = make_workspace(
        tmp_path / "ws",
        scripts={"s.toml": ASKS + FINISH_EVERYTHING},
        agents={"main": scripted("s.toml")},
        extra="[loop]\nhuman_timeout_s = 300\n",
    )
    run_id, question = _asking(root)
    folder = WorkspaceLayout(root=root).store.parent
    saved = tmp_path / "saved"
    shutil.copytree(folder, saved)
    commands = {
        "respond": ["respond", "Use PostgreSQL", "--question", question],
        "guide": ["guide", "Keep it small"],
        "memory": ["memory", "add", "The tests use SQLite"],
        "task": ["task", "add", "Write the migration"],
        "abandon": ["abandon", run_id],
    }
    here = shlex.quote(str(folder))
    lines = [
        f"mount -t tmpfs -o size=2m tmpfs {here} || exit 99",
        f"cp -a {shlex.quote(str(saved))}/. {here}/",
        f"head -c 4M /dev/zero > {here}/filler 2>/dev/null",
    ]
    for name, args in commands.items():
        lines.append(f"echo '>>> {name}' >&2; {shlex.join([*RALPH, *args])}; echo {name}=$?")
    lines.append(f"rm {here}/filler; echo '>>> verify' >&2")
    lines.append(f"{shlex.join([*RALPH, 'replay', '--verify'])} >/dev/null; echo verify=$?")
    lines.append(f"{shlex.join([*RALPH, 'status', '--json'])}")
    done = in_mount_namespace("; ".join(lines), root)
    if done.returncode == 99:
        pytest.skip(f"no tmpfs mount in a user namespace here: {done.stderr.strip()}")
    said = dict(part.split("\n", 1) for part in done.stderr.split(">>> ")[1:])
    for name in commands:
        assert f"{name}=4" in done.stdout, (name, done.stdout[-3000:], said.get(name))
        message = said[name].strip()
        assert "the disk is full" in message, (name, message)
        assert "\n" not in message, (name, message)
        assert "Traceback" not in message, (name, message)
    assert "verify=0" in done.stdout, (done.stdout[-3000:], said.get("verify"))
    assert question in done.stdout.split("verify=0")[-1], "the question no longer waits"


def test_an_agents_emit_on_a_full_disk_exits_4_and_takes_its_half_line_back(
    tmp_path: Path,
) -> None:
    """The events file on a full tmpfs with 9 bytes left in its last page: ``ralph emit`` and
    an agent's ``ralph memory add`` (which emits) exit 4 saying the disk is full, and the
    bytes that went in are taken back: the events file is as it was, no half line in it."""
    if shutil.which("unshare") is None:
        pytest.skip("no unshare(1) on this machine")
    small = tmp_path / "small"
    small.mkdir()
    events = small / "events.jsonl"
    here = shlex.quote(str(small))
    said = "a payload longer than the nine bytes left"
    lines = [
        f"mount -t tmpfs -o size=64k tmpfs {here} || exit 99",
        # 4,087 bytes: 9 left in the file's page, and no page free after the filler.
        f"printf '%4086s\\n' x > {shlex.quote(str(events))}",
        f"head -c 1M /dev/zero > {here}/filler 2>/dev/null",
        f"{shlex.join([*RALPH, 'emit', 'some.topic', said])}; echo emit=$?",
        f"{shlex.join([*RALPH, 'memory', 'add', said])}; echo memory=$?",
        f"wc -c < {shlex.quote(str(events))}; tail -c 2 {shlex.quote(str(events))} | od -c",
    ]
    env_line = f"export RALPH_EVENTS_FILE={shlex.quote(str(events))}"
    done = in_mount_namespace("; ".join([env_line, *lines]), tmp_path)
    if done.returncode == 99:
        pytest.skip(f"no tmpfs mount in a user namespace here: {done.stderr.strip()}")
    assert "emit=4" in done.stdout, (done.stdout, done.stderr)
    assert "memory=4" in done.stdout, (done.stdout, done.stderr)
    assert done.stderr.count("the disk is full") == 2, done.stderr
    assert "Traceback" not in done.stderr
    assert "\n4087\n" in done.stdout, done.stdout  # the file's size as before
    assert "x  \\n" in done.stdout, done.stdout  # it still ends with its own whole line
