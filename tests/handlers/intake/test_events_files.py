"""Run-isolated events files, the marker that names them, and ``ralph emit`` (real files and
real processes)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path, PurePosixPath

import orjson
import pytest

from pipeline.app.workspace import drive, open_workspace
from pipeline.events import TopicPublished
from pipeline.handlers.intake import (
    EventsFileError,
    UnsafeFileError,
    checked_events_path,
    emit_target,
    read_marker,
    write_marker,
)
from tests.runtime.workspace import (
    FINISH_EVERYTHING,
    ROOT,
    events_of,
    make_workspace,
    ralph,
    run_here,
    scripted,
)

pytestmark = pytest.mark.slow  # whole runs in subprocesses: seconds a test


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("/etc/passwd.jsonl", "absolute"),
        (".ralph/../../x.jsonl", "'..'"),
        ("events.jsonl", "not directly in .ralph/"),
        (".agent/events.jsonl", "not directly in .ralph/"),
        (".ralph/sub/events.jsonl", "not directly in .ralph/"),
        (".ralph/events.txt", "not a .jsonl file"),
        ("", "empty"),
    ],
)
def test_a_marker_naming_a_forbidden_path_is_refused(text: str, why: str) -> None:
    """Absolute, climbing, not directly in .ralph/ or not .jsonl: an error that says which."""
    with pytest.raises(EventsFileError, match=why):
        checked_events_path(text)


def test_the_events_file_is_found_in_the_documented_order(tmp_path: Path) -> None:
    """RALPH_EVENTS_FILE, else the marker (found from a subdirectory), else, in a workspace
    without a marker, .ralph/events.jsonl (seed 003, AC5); outside any workspace there is no
    run to emit to, and that is an error saying so."""
    root = tmp_path / "ws"
    nested = root / "src" / "deep"
    nested.mkdir(parents=True)
    with pytest.raises(EventsFileError, match="no run to emit to"):
        emit_target(nested, {})
    (root / ".ralph").mkdir()
    assert emit_target(nested, {}) == (root / ".ralph" / "events.jsonl", True)
    write_marker(root, root / ".ralph" / "events-1.jsonl")
    assert read_marker(root) is not None
    assert emit_target(nested, {}) == (root / ".ralph" / "events-1.jsonl", False)
    env = {"RALPH_EVENTS_FILE": str(tmp_path / "env.jsonl")}
    assert emit_target(nested, env) == (tmp_path / "env.jsonl", False)
    assert emit_target(tmp_path, {"RALPH_WORKSPACE_ROOT": str(root)}) == (
        root / ".ralph" / "events-1.jsonl",
        False,
    )


def test_ralph_emit_writes_one_line_and_refuses_bad_input_writing_nothing(tmp_path: Path) -> None:
    """Text and JSON payloads; a bad topic or bad JSON: exit 2 and the file untouched."""
    (tmp_path / ".ralph").mkdir()
    target = tmp_path / ".ralph" / "events.jsonl"
    write_marker(tmp_path, target)
    ok = ralph("emit", "build.done", "all green", cwd=tmp_path)
    assert ok.returncode == 0, ok.stderr
    assert ok.stdout.strip() == "Event emitted: build.done"
    structured = ralph("emit", "plan:ready", '{"steps": [1, 2]}', "--json", cwd=tmp_path)
    assert structured.returncode == 0, structured.stderr
    before = target.read_bytes()
    for args in (("bad topic", "x"), ("t", "{nope", "--json"), ("t", "--json")):
        refused = ralph("emit", *args, cwd=tmp_path)
        assert refused.returncode == 2
        assert refused.stderr.startswith("error:")
    assert target.read_bytes() == before
    lines = [orjson.loads(line) for line in before.splitlines()]
    assert [(x["topic"], x["payload"]) for x in lines] == [
        ("build.done", "all green"),
        ("plan:ready", {"steps": [1, 2]}),
    ]
    assert all(x["ts"].endswith("Z") for x in lines)


EMITTER = """
import sys
from pathlib import Path
from pipeline.handlers.intake import emit
target, who = Path(sys.argv[1]), sys.argv[2]
for n in range(100):
    emit(target, f"worker.{who}", f"line {n} " + "x" * 300)
"""


def test_fifty_concurrent_emitters_give_five_thousand_whole_lines(tmp_path: Path) -> None:
    """50 processes x 100 lines at once: every line whole, valid and present exactly once."""
    target = tmp_path / ".ralph" / "events.jsonl"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    workers = [
        subprocess.Popen([sys.executable, "-c", EMITTER, str(target), str(n)], env=env)
        for n in range(50)
    ]
    assert [w.wait(timeout=120) for w in workers] == [0] * 50
    lines = target.read_bytes().split(b"\n")
    assert lines[-1] == b""
    records = [orjson.loads(line) for line in lines[:-1]]
    assert len(records) == 5_000
    seen = {(r["topic"], r["payload"]) for r in records}
    assert len(seen) == 5_000


def test_ralph_emit_processes_at_once_do_not_tear_lines(tmp_path: Path) -> None:
    """Twenty real ``ralph emit`` processes started together: twenty whole lines."""
    (tmp_path / ".ralph").mkdir()
    write_marker(tmp_path, tmp_path / ".ralph" / "events.jsonl")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    workers = [
        subprocess.Popen(
            [sys.executable, "-m", "pipeline.app.cli", "emit", f"t.{n}", "y" * 5_000],
            cwd=tmp_path,
            env=env,
            stdout=subprocess.DEVNULL,
        )
        for n in range(20)
    ]
    assert [w.wait(timeout=120) for w in workers] == [0] * 20
    records = [
        orjson.loads(line)
        for line in (tmp_path / ".ralph" / "events.jsonl").read_bytes().splitlines()
    ]
    assert sorted(r["topic"] for r in records) == sorted(f"t.{n}" for n in range(20))


def test_each_run_writes_its_own_events_file_and_resume_reuses_it(tmp_path: Path) -> None:
    """A first run's topics stay in its own file; a second fresh run starts a new, empty file
    that the marker names; driving the first again points the marker back and creates no
    file (``ralph resume`` of the finished run only says it has finished)."""
    first_steps = FINISH_EVERYTHING.replace(
        "[[default]]",
        '[[planning]]\nemit = [["archaeology.start", "dig"], ["map.created", "map"]]',
    )
    root = make_workspace(
        tmp_path / "ws",
        scripts={"s.toml": first_steps + FINISH_EVERYTHING},
        agents={"main": scripted("s.toml")},
    )
    first = run_here(root)
    first_file = root / ".ralph" / f"events-{first.run_id}.jsonl"
    topics = [orjson.loads(x)["topic"] for x in first_file.read_bytes().splitlines()]
    assert topics == ["archaeology.start", "map.created"]
    (root / ".ralph" / "s.toml").write_text(FINISH_EVERYTHING)
    (root / ".agent" / "scripted-agent-state.json").unlink()
    second = run_here(root)
    second_file = root / ".ralph" / f"events-{second.run_id}.jsonl"
    assert second.run_id != first.run_id
    assert second_file.read_bytes() == b""
    # What each run's log holds: the first run read its topics, the second sees none of them.
    first_topics = [e.topic for e in events_of(root, first) if isinstance(e, TopicPublished)]
    assert first_topics == ["archaeology.start", "map.created"]
    assert first.state.intake.seen_topics == {"archaeology.start", "map.created"}
    assert not [e for e in events_of(root, second) if isinstance(e, TopicPublished)]
    assert second.state.intake.seen_topics == frozenset()
    assert read_marker(root) is not None
    assert root / str(read_marker(root)) == second_file
    files_before = sorted((root / ".ralph").glob("events-*.jsonl"))
    # `ralph resume` of a finished run says so and touches nothing; driving it again does.
    told = ralph("resume", first.run_id, cwd=root)
    assert told.returncode == 0, told.stderr
    assert "has finished already" in told.stdout
    assert root / str(read_marker(root)) == second_file
    drive(open_workspace(root), prompt=None, run_id=first.run_id)
    assert sorted((root / ".ralph").glob("events-*.jsonl")) == files_before
    assert root / str(read_marker(root)) == first_file


def test_the_marker_is_read_and_written_through_no_link(tmp_path: Path) -> None:
    """A marker that is a link is refused, saying so; a link planted at the marker's
    temporary name is replaced, not written through; a directory at the marker's name makes
    write_marker report False instead of raising."""
    root = tmp_path / "ws"
    (root / ".ralph").mkdir(parents=True)
    outside = tmp_path / "outside"
    outside.write_text(".ralph/events-x.jsonl\n")
    marker = root / ".ralph" / "current-events"
    marker.symlink_to(outside)
    with pytest.raises(UnsafeFileError, match="symbolic link"):
        read_marker(root)
    marker.unlink()
    (root / ".ralph" / "current-events.tmp").symlink_to(outside)
    assert write_marker(root, root / ".ralph" / "events-1.jsonl")
    assert outside.read_text() == ".ralph/events-x.jsonl\n"
    assert read_marker(root) == PurePosixPath(".ralph/events-1.jsonl")
    marker.unlink()
    marker.mkdir()
    assert not write_marker(root, root / ".ralph" / "events-2.jsonl")
