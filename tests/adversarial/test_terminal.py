"""Agent text never reaches a terminal raw: a shell agent puts a window title, a screen clear,
a clipboard write (OSC 52), a bidi override, rich markup and an emoji code into its topics, its
question and its failure message; every byte ``ralph`` prints (``run --plain``, the live panel
on a pseudo-terminal, ``respond``, ``events``, ``status``, ``topics``, the Markdown report)
shows them escaped, and the log keeps them byte for byte."""

from __future__ import annotations

import os
import pty
import select
import subprocess
import time
from pathlib import Path

import pytest

from pipeline.engine import load_state
from pipeline.events import InvocationFailed, TopicPublished
from pipeline.handlers.runtime import WorkspaceLayout
from pipeline.handlers.store import SqliteEventStore
from tests.runtime.workspace import RALPH, ROOT, make_workspace, stored_events

pytestmark = pytest.mark.slow  # whole runs in subprocesses: seconds a test

HOSTILE = "a\x1b]0;pwned\x07b\x1b[2Jc\x1b]52;c;ZXZpbA==\x07d\u202ee root:x:0:0 [bold red]f[/] g"
"""Title, clear screen, clipboard write, right-to-left override, an emoji code, markup."""

AGENT = r"""#!/bin/sh
sequences='a\033]0;pwned\007b\033[2Jc\033]52;c;ZXZpbA==\007d\342\200\256e'
hostile="$(printf "$sequences root:x:0:0 [bold red]f[/] g")"
n=$(cat .ralph/calls 2>/dev/null || echo 0)
n=$((n + 1))
echo "$n" > .ralph/calls
if [ "$n" = 1 ]; then
    "$RALPH_BIN" emit progress "$hostile" > /dev/null
    "$RALPH_BIN" emit human.interact "$hostile" > /dev/null
    mkdir -p .agent/out
    printf '1. do it' > .agent/out/plan.md
    exit 0
fi
echo "$hostile" >&2
exit 1
"""

BIDI = ("\u202e".encode(), "\u2066".encode())


def _workspace(root: Path, human_timeout_s: int) -> Path:
    root.mkdir(parents=True)
    agent = root.parent / "agent.sh"  # outside the repository: not a change to commit
    agent.write_text(AGENT)
    agent.chmod(0o755)
    return make_workspace(
        root,
        scripts={},
        agents={"main": [str(agent)]},
        budgets="max_retries_per_agent = 0\nmax_iterations = 1\nmax_review_passes = 1",
        extra=f"[loop]\nhuman_timeout_s = {human_timeout_s}\n",
    )


def _env() -> dict[str, str]:
    return {**os.environ, "COLUMNS": "200", "PYTHONPATH": str(ROOT)}


def _ralph(*args: str, cwd: Path) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([*RALPH, *args], cwd=cwd, env=_env(), capture_output=True, timeout=120)


def _raw(output: bytes) -> list[str]:
    """What of the agent's text got through raw."""
    found = [name for name, raw in (("ESC", b"\x1b"), ("BEL", b"\x07")) if raw in output]
    found += ["bidi" for raw in BIDI if raw in output]
    return found + (["emoji"] if "❌".encode() in output else [])


def _wait_for_question(root: Path, within_s: float = 60) -> str:
    """The id of the question the run waits on, once it has been asked."""
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        path = WorkspaceLayout(root=root).store
        if path.is_file():
            with SqliteEventStore(path) as store:
                runs = store.runs()
                question = (
                    load_state(store, runs[-1].run_id)[0].ledger.pending_question if runs else None
                )
                if question is not None and question.asked:
                    return question.question_id
        time.sleep(0.1)
    raise AssertionError("no question was asked")


def test_no_control_sequence_of_an_agent_reaches_plain_output_or_any_command(
    tmp_path: Path,
) -> None:
    """``run --plain``, ``respond`` (echoing the question), ``events``, ``status``, ``topics``
    and ``report --markdown -``: no ESC, BEL or bidi byte, no emoji; the text is there,
    escaped; the stored facts hold the agent's bytes unchanged."""
    root = _workspace(tmp_path / "ws", human_timeout_s=120)
    run = subprocess.Popen(
        [*RALPH, "run", "--plain"],
        cwd=root,
        env=_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        question = _wait_for_question(root)
        outputs = {"respond": _ralph("respond", "fine", "--question", question, cwd=root)}
        out, err = run.communicate(timeout=120)
    finally:
        run.kill()
    assert outputs["respond"].returncode == 0, outputs["respond"].stderr
    for command in (["events"], ["status"], ["topics"], ["report", "--markdown", "-"]):
        outputs[" ".join(command)] = _ralph(*command, cwd=root)
    shown = {"run --plain": out + err} | {
        name: done.stdout + done.stderr for name, done in outputs.items()
    }
    assert {name: _raw(data) for name, data in shown.items()} == {name: [] for name in shown}
    # shown, escaped: the failure message (its ANSI stripped), the payloads (JSON-escaped)
    for name in ("run --plain", "events", "topics", "respond"):
        assert b"\\u202ee root:x:0:0 [bold red]f[/] g" in shown[name], (name, shown[name])
    for name in ("topics", "respond"):
        assert b"]0;pwned" in shown[name], (name, shown[name])
    assert b"root:x:0:0 [bold red]f[/] g" in shown["status"]

    facts = stored_events(root)
    topics = [f for f in facts if isinstance(f, TopicPublished)]
    assert [t.payload.value for t in topics[:2]] == [HOSTILE, HOSTILE]
    failed = [f for f in facts if isinstance(f, InvocationFailed)]
    assert failed
    assert "\u202ee root:x:0:0 [bold red]f[/] g" in failed[0].message  # (ANSI already stripped)


def test_the_live_panel_on_a_terminal_shows_agent_text_escaped(tmp_path: Path) -> None:
    """``ralph run`` on a pseudo-terminal (the live panel): none of the agent's sequences (the
    title, the screen clear, the clipboard write), no bidi override and no emoji reach it."""
    root = _workspace(tmp_path / "ws", human_timeout_s=1)
    leader, follower = pty.openpty()
    run = subprocess.Popen(
        [*RALPH, "run"],
        cwd=root,
        env={**_env(), "TERM": "xterm-256color"},
        stdin=follower,
        stdout=follower,
        stderr=follower,
    )
    os.close(follower)
    seen = b""
    deadline = time.monotonic() + 120
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([leader], [], [], 0.5)
            if ready:
                try:
                    chunk = os.read(leader, 65536)
                except OSError:  # the terminal closed: the run ended
                    break
                if not chunk:
                    break
                seen += chunk
            elif run.poll() is not None:
                break
    finally:
        run.kill()
        run.wait()
        os.close(leader)
    assert b"Exit status" in seen, seen[-2000:]
    for sequence in (b"\x1b]0;", b"\x1b[2J", b"\x1b]52;", b"\x07", *BIDI, "❌".encode()):
        assert sequence not in seen, sequence
    assert b"\\u202ee root:x:0:0" in seen  # the failure message, escaped
