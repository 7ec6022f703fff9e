"""``ralph memory`` and ``ralph task`` as real subprocesses: an agent's call (``RALPH_EVENTS_FILE``
set) writes one topic to its run's events file and nothing else, stays lean, and refuses bad
input with exit 2 and nothing written; a person's goes into the workspace's book, and bad
input exits 2 leaving the book as it was."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from pipeline.app.cli._note import _parser, _plain
from pipeline.handlers.runtime import WorkspaceLayout

RALPH = [sys.executable, "-m", "pipeline.app.cli"]


def _ralph(cwd: Path, *args: str, events: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "RALPH_EVENTS_FILE"}
    if events is not None:
        env["RALPH_EVENTS_FILE"] = str(events)
    return subprocess.run(
        [*RALPH, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=60, check=False
    )


def test_an_agents_call_writes_one_topic_and_refuses_bad_input(tmp_path: Path) -> None:
    events = tmp_path / "events.jsonl"
    events.touch()
    added = _ralph(tmp_path, "task", "add", "Write the parser", events=events)
    assert added.returncode == 0, added.stderr
    kept = _ralph(tmp_path, "memory", "add", "Tabs", "--tag", "developer", events=events)
    assert kept.returncode == 0, kept.stderr
    lines = [orjson.loads(line) for line in events.read_bytes().splitlines()]
    assert [line["topic"] for line in lines] == ["ralph.task.add", "ralph.memory.add"]
    task_id = lines[0]["payload"]["id"]
    assert added.stdout.strip() == f"Task {task_id} added."
    # The id comes from the title: the same title names the same task.
    again = _ralph(tmp_path, "task", "add", "  Write the parser ", events=events)
    assert again.stdout.strip() == f"Task {task_id} added."
    assert lines[1]["payload"] == {
        "id": lines[1]["payload"]["id"],
        "text": "Tabs",
        "tags": ["developer"],
    }
    before = events.read_bytes()
    assert len(before.splitlines()) == 3  # with the repeated add
    for bad, why in (
        (["memory", "add", "   "], "the memory is empty"),
        (["task", "done", "../x"], "is not an id"),
        (["memory", "add", "x" * 2001], "at most 2000"),
        (["memory", "add", "x", "--tag", "two words"], "is not an id"),
        (["task", "frobnicate", "t-1"], "No such command"),
    ):
        refused = _ralph(tmp_path, *bad, events=events)
        assert refused.returncode == 2, (bad, refused.stdout)
        assert why in refused.stderr, (bad, refused.stderr)
    assert events.read_bytes() == before  # nothing of the refused calls
    listed = _ralph(tmp_path, "task", "list", events=events)
    assert listed.returncode == 0
    assert "Your prompt's 'Memories and tasks' section" in listed.stdout


def test_a_persons_notes_go_into_the_book_and_bad_ones_change_nothing(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    subprocess.run(["git", "init", "-q"], cwd=root, check=True)
    assert _ralph(root, "task", "add", "Write docs").returncode == 0
    assert _ralph(root, "memory", "add", "Use tabs").returncode == 0
    store = WorkspaceLayout(root=root).store
    size = store.stat().st_size
    listed = json.loads(_ralph(root, "task", "list", "--json").stdout)
    for bad, why in (
        (["task", "done", "t-00000000"], "no task t-00000000"),
        (["task", "add", "Write docs"], "exists already"),
        (["memory", "add", ""], "the text is empty"),
        (["memory", "remove", "m-nope"], "no memory m-nope"),
        (["memory", "add", "x", "--tag", "a b"], "the tag 'a b'"),
    ):
        refused = _ralph(root, *bad)
        assert refused.returncode == 2, (bad, refused.stdout)
        assert why in refused.stderr, (bad, refused.stderr)
    assert json.loads(_ralph(root, "task", "list", "--json").stdout) == listed
    assert store.stat().st_size == size
    done = _ralph(root, "task", "done", str(listed["id"]))
    assert done.returncode == 0, done.stderr
    assert _ralph(root, "task", "list").stdout.strip() == "No tasks left to do."
    outside = _ralph(tmp_path, "memory", "add", "nowhere")
    assert outside.returncode == 2
    assert "is not the top of a git repository" in outside.stderr
    assert _ralph(tmp_path, "memory", "list").stdout.strip() == "No memories."


def test_a_persons_note_reads_only_the_store_of_ralph_toml(tmp_path: Path) -> None:
    """A person's ``ralph memory``/``task`` takes from ``ralph.toml`` only its ``[store] url``
    (as ``respond`` and ``guide`` do): an agent whose program is not installed does not stop
    a note, and the note goes to the store the file names."""
    root = tmp_path / "ws"
    root.mkdir()
    subprocess.run(["git", "init", "-q"], cwd=root, check=True)
    (root / "ralph.toml").write_text(
        '[store]\nurl = "team.db"\n\n[agents.absent]\ncommand = ["ralph-no-such-program"]\n'
        '\n[chains]\ndefault = ["absent"]\n',
        "utf-8",
    )
    added = _ralph(root, "task", "add", "Write docs")
    assert added.returncode == 0, added.stderr
    assert (root / "team.db").is_file()
    assert not WorkspaceLayout(root=root).store.exists()
    listed = _ralph(root, "task", "list", "--json")
    assert json.loads(listed.stdout)["title"] == "Write docs"


@pytest.mark.parametrize(
    ("group", "argv"),
    [
        ("memory", ["add", "Use tabs"]),
        ("memory", ["remove", "m-1"]),
        ("task", ["add", "Write it"]),
        ("task", ["start", "t-1"]),
        ("task", ["done", "t-1"]),
        ("task", ["block", "t-1"]),
    ],
)
def test_the_plain_reading_agrees_with_argparse(group: str, argv: list[str]) -> None:
    """The shapes agents use most skip argparse (a third of the command); they read as
    argparse reads them, and anything else (an option) is left to argparse."""
    plain = _plain(group, argv)
    assert plain is not None
    assert vars(plain) == vars(_parser(group).parse_args(argv))
    assert _plain(group, [*argv, "--tag", "x"]) is None
