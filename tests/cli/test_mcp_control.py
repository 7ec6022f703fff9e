"""``ralph mcp --control -C DIR``: a person's tools over MCP, driving real runs of a real
workspace through the ``mcp`` SDK's client and raw JSON-RPC lines, each tool as its command."""

from __future__ import annotations

import json
import os
import re
import sqlite3
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import anyio
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

from pipeline.engine import load_state
from pipeline.events import (
    GuidanceGiven,
    HumanResponseReceived,
    PipelineEvent,
    RunForked,
    RunInterrupted,
)
from pipeline.handlers.runtime import WorkspaceLayout
from pipeline.handlers.store import SqliteEventStore
from tests.cli.mcp_driving import ENV, HELLO, RALPH, request
from tests.runtime.workspace import (
    FINISH_EVERYTHING,
    make_workspace,
    ralph,
    scripted,
    start_ralph,
    then_finish,
    wait_for,
)

SECRET = "s3cr3t-value-4242"

ASKS = f"""
[[development]]
emit = [["human.interact", "Which database? The key is {SECRET}\\u001b]0;pwned\\u0007"]]
write.".agent/out/status" = "partial\\nasked"
write.".agent/out/issues.md" = ""
write.".agent/out/commit-message" = "Ask"
"""
"""A developer that asks a person a question (quoting a secret), then every role succeeds."""

STEERED = """
n=$(cat .ralph/calls 2>/dev/null || echo 0)
n=$((n + 1))
echo "$n" > .ralph/calls
cat > ".ralph/prompt-$n.md"
if [ "$n" = 1 ]; then
    : > .ralph/first
    while [ ! -e .ralph/go ]; do sleep 0.1; done
fi
if [ "$n" = 2 ]; then
    : > .ralph/second
    sleep 120
fi
mkdir -p .agent/out
printf '1. do it' > .agent/out/plan.md
printf 'partial\\nmore' > .agent/out/status
: > .agent/out/issues.md
printf 'Do a part' > .agent/out/commit-message
echo "$n" >> work.txt
"""
"""A shell agent for every role: its first call waits for ``.ralph/go``, its second works
for two minutes (long enough to be interrupted); each keeps its prompt."""

Calls = Sequence[tuple[str, dict[str, Any]]]


def control(
    root: Path, calls: Calls, *extra: str, env: Mapping[str, str] | None = None
) -> list[tuple[bool, str]]:
    """``calls`` to one ``ralph mcp --control -C ROOT EXTRA`` as raw lines: each one's
    ``(isError, text)``."""
    lines = [request(i, "tools/call", name=n, arguments=a) for i, (n, a) in enumerate(calls, 1)]
    data = b"".join(json.dumps(m).encode() + b"\n" for m in [*HELLO, *lines])
    done = subprocess.run(
        [*RALPH, "mcp", "--control", "-C", str(root), *extra],
        input=data,
        cwd=root,
        env={**ENV, **(env or {})},
        capture_output=True,
        timeout=180,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert b"Traceback" not in done.stderr, done.stderr
    answers = [json.loads(line) for line in done.stdout.splitlines()]
    assert [a["id"] for a in answers] == list(range(len(calls) + 1))
    return [(a["result"]["isError"], a["result"]["content"][0]["text"]) for a in answers[1:]]


def events_in(root: Path, run_id: str) -> list[PipelineEvent]:
    """The log of ``run_id`` in ``root``'s default store."""
    with SqliteEventStore(WorkspaceLayout(root=root).store) as store:
        return list(store.read(run_id))


def asked_question(root: Path) -> tuple[str, str] | None:
    """The latest run of ``root`` and the id of the question it waits on, once asked."""
    path = WorkspaceLayout(root=root).store
    if not path.is_file():
        return None
    with SqliteEventStore(path) as store:
        runs = store.runs()
        if not runs:
            return None
        state, _ = load_state(store, runs[-1].run_id)
    asked = state.ledger.pending_question
    return (runs[-1].run_id, asked.question_id) if asked is not None and asked.asked else None


def test_control_without_a_named_workspace_refuses_to_start(tmp_path: Path) -> None:
    """Without ``-C``, or with a folder that is no workspace, ``ralph mcp --control`` exits 2
    with the fix and answers nothing: the person names what it may drive."""
    bare = subprocess.run(
        [*RALPH, "mcp", "--control"], cwd=tmp_path, env=ENV, capture_output=True, text=True
    )
    assert bare.returncode == 2
    assert "name the workspace it may drive with -C DIR" in bare.stderr
    assert bare.stdout == ""
    elsewhere = subprocess.run(
        [*RALPH, "mcp", "--control", "-C", str(tmp_path)],
        env=ENV,
        capture_output=True,
        text=True,
    )
    assert elsewhere.returncode == 2
    assert "ralph.toml: not found" in elsewhere.stderr
    assert elsewhere.stdout == ""


def test_control_inside_a_run_is_refused(tmp_path: Path) -> None:
    """With a run's ``RALPH_RUN_ID`` set (an agent starting it), it exits 2 before serving."""
    root = make_workspace(
        tmp_path / "ws", scripts={"s.toml": FINISH_EVERYTHING}, agents={"main": scripted("s.toml")}
    )
    inside = subprocess.run(
        [*RALPH, "mcp", "--control", "-C", str(root)],
        env={**ENV, "RALPH_RUN_ID": "20261129-061500-a1b2c3"},
        capture_output=True,
        text=True,
        input="",
    )
    assert inside.returncode == 2
    assert "the person's, not a run's agent's" in inside.stderr


def test_ralph_help_names_mcp() -> None:
    """``ralph --help`` lists ``mcp``, which is dispatched before typer."""
    shown = subprocess.run([*RALPH, "--help"], env=ENV, capture_output=True, text=True)
    assert shown.returncode == 0, shown.stderr
    assert re.search(r"│ mcp\s", shown.stdout), shown.stdout


def test_a_run_started_guided_interrupted_and_forked_through_mcp(tmp_path: Path) -> None:
    """Through the SDK's client: ``start_run`` starts a run and names it; ``guide`` keeps
    guidance that the next prompt carries; ``interrupt`` stops the run with ``RunInterrupted``;
    ``fork`` makes a fork whose worktree and log exist."""
    root = make_workspace(
        tmp_path / "ws",
        scripts={},
        agents={"main": ["sh", "-c", STEERED]},
    )
    ralph_dir = root / ".ralph"

    async def session() -> dict[str, str]:
        server = StdioServerParameters(
            command=RALPH[0], args=[*RALPH[1:], "mcp", "--control", "-C", str(root)], env=ENV
        )
        said: dict[str, str] = {}
        async with stdio_client(server) as (read, write), ClientSession(read, write) as client:
            await client.initialize()

            async def call(name: str, **arguments: Any) -> str:
                result = await client.call_tool(name, arguments)
                text: str = result.content[0].text  # type: ignore[union-attr]
                assert not result.is_error, (name, text)
                said[name] = text
                return text

            started = await call("start_run", prompt="Make the tests pass, steered.")
            found = re.fullmatch(r"Started run (\S+) \(pid \d+\)\.", started)
            assert found is not None, started
            run_id = found.group(1)
            while not (ralph_dir / "first").exists():
                await anyio.sleep(0.1)
            await call("guide", run=run_id, text="Keep the change small, please.")
            (ralph_dir / "go").touch()
            while not (ralph_dir / "second").exists():
                await anyio.sleep(0.1)
            await call("interrupt", run=run_id)
            while not any(isinstance(e, RunInterrupted) for e in events_in(root, run_id)):
                await anyio.sleep(0.2)
            facts = len(events_in(root, run_id))
            await call("fork", run=run_id, at=facts, prompt="Try it another way.")
            said["run"] = run_id
        return said

    try:
        said = anyio.run(session)
    finally:
        # The started run outlives the server by design: stop it should the test fail early.
        ralph("interrupt", "-C", str(root), cwd=root)
    run_id = said["run"]
    assert "Guidance 1 for run" in said["guide"]
    assert "Keep the change small, please." in (ralph_dir / "prompt-2.md").read_text()
    assert "Keep the change small" not in (ralph_dir / "prompt-1.md").read_text()
    log = events_in(root, run_id)
    assert [e.text for e in log if isinstance(e, GuidanceGiven)] == [
        "Keep the change small, please."
    ]
    assert [e.reason for e in log if isinstance(e, RunInterrupted)] == ["SIGINT"]
    forked = re.search(r"Forked run (\S+) after fact \d+ into (\S+);", said["fork"])
    assert forked is not None, said["fork"]
    fork, target = forked.group(1), Path(forked.group(2))
    assert (target / "ralph.toml").is_file()
    fork_log = events_in(target, fork)
    assert isinstance(fork_log[-1], RunForked)
    assert fork_log[-1].source_run == run_id


def test_a_question_is_answered_through_mcp(tmp_path: Path) -> None:
    """As raw lines: ``run_status`` shows the waiting question's id, ``answer`` answers it
    as ``ralph respond`` does, and the run goes on to complete with the answer in its log."""
    root = make_workspace(
        tmp_path / "ws",
        scripts={"s.toml": then_finish("development", ASKS)},
        agents={"main": scripted("s.toml")},
        extra="[loop]\nhuman_timeout_s = 300\n",
    )
    running = start_ralph("run", "--plain", cwd=root)
    try:
        wait_for(lambda: asked_question(root), "no question was asked", alive=running)
        asked = asked_question(root)
        assert asked is not None
        run_id, question = asked
        ((error, status),) = control(root, [("run_status", {"run": run_id})])
        assert not error, status
        assert f"--question {question}" in status
        answers = control(
            root,
            [
                ("answer", {"run": run_id, "question_id": "q-nope", "text": "SQLite"}),
                ("answer", {"run": run_id, "question_id": question, "text": "Use SQLite"}),
            ],
        )
        assert answers[0][0], answers
        assert answers[1] == (False, f"Answered {question} of run {run_id}."), answers
        out, err = running.communicate(timeout=120)
    finally:
        if running.poll() is None:
            running.kill()
    assert running.returncode == 0, out + err
    replies = [e for e in events_in(root, run_id) if isinstance(e, HumanResponseReceived)]
    assert [r.text for r in replies] == ["Use SQLite"]


def test_reading_tools_answer_from_the_store_and_bad_calls_are_tool_errors(
    tmp_path: Path,
) -> None:
    """On a store with a finished run, ``list_runs``, ``run_status`` and ``run_report`` say
    what ``ralph runs``, ``status`` and ``report`` say; an unknown run, a bad argument or a
    command's refusal is an ``isError`` result with the reason, and the server goes on."""
    root = make_workspace(
        tmp_path / "ws", scripts={"s.toml": FINISH_EVERYTHING}, agents={"main": scripted("s.toml")}
    )
    assert ralph("run", "--plain", cwd=root).returncode == 0
    with SqliteEventStore(WorkspaceLayout(root=root).store) as store:
        (run,) = store.runs()
    run_id = run.run_id
    results = control(
        root,
        [
            ("list_runs", {}),
            ("run_status", {}),
            ("run_report", {"run": run_id}),
            ("run_status", {"run": "20200101-000000-000000"}),
            ("run_report", {"run": "../../etc"}),
            ("guide", {"run": run_id, "text": "too late"}),
            ("guide", {"run": run_id}),
            ("interrupt", {"run": run_id}),
            ("fork", {"run": run_id, "at": "3"}),
            ("fork", {"run": run_id, "at": 0}),
            ("fork", {"run": run_id, "at": 3, "to": "/tmp/elsewhere"}),
            ("submit_run", {"prompt": "Queue it"}),
            ("start_run", {"prompt": ""}),
            ("start_run", {"prompt": "a\x00b"}),
        ],
    )
    (listed, status, report, *refused) = results
    assert not listed[0]
    assert run_id in listed[1]
    assert not status[0]
    assert "phase: complete" in status[1]
    assert run_id in status[1]
    assert not report[0]
    assert f"ralph run {run_id}" in report[1]
    assert all(error for error, _ in refused), refused
    reasons = [text for _, text in refused]
    assert "no run '20200101-000000-000000'" in reasons[0]
    assert "does not match" in reasons[1]
    assert "has ended" in reasons[2] or "ended" in reasons[2], reasons[2]
    assert reasons[3] == "the argument 'text' is required"
    assert "no run is in progress" in reasons[4]
    assert reasons[5] == "at must be a whole number"
    assert reasons[6] == "at is 0, under 1"
    assert reasons[7].startswith("unknown argument 'to'")
    assert "PostgreSQL" in reasons[8]
    assert reasons[9] == "prompt is empty"
    assert reasons[10] == "the prompt holds a NUL character"


def _places(schema: Mapping[str, Any]) -> list[str]:
    """The arguments of ``schema`` that could name a place: a path, a folder, a URL, a store."""
    places = re.compile(r"path|file|dir|folder|url|uri|store|workspace|root|to$|where", re.I)
    return [
        name
        for name, rule in schema["properties"].items()
        if places.search(name) or "format" in rule or re.search(r"path|url", rule["description"])
    ]


def test_no_tool_takes_a_path_or_a_url(tmp_path: Path) -> None:
    """Every control tool is a closed object whose arguments name no place (path, folder,
    URL, store or workspace), and every run id is a name without a slash; the check is shown
    to catch such an argument."""
    root = make_workspace(
        tmp_path / "ws", scripts={"s.toml": FINISH_EVERYTHING}, agents={"main": scripted("s.toml")}
    )
    data = b"".join(json.dumps(m).encode() + b"\n" for m in [*HELLO, request(1, "tools/list")])
    done = subprocess.run(
        [*RALPH, "mcp", "--control", "-C", str(root)],
        input=data,
        env=ENV,
        capture_output=True,
        timeout=120,
        check=True,
    )
    listed = json.loads(done.stdout.splitlines()[1])["result"]["tools"]
    names = {tool["name"] for tool in listed}
    assert names == {
        "list_runs",
        "run_status",
        "run_report",
        "start_run",
        "submit_run",
        "guide",
        "answer",
        "interrupt",
        "fork",
    }
    for tool in listed:
        schema = tool["inputSchema"]
        assert schema["additionalProperties"] is False, tool["name"]
        assert _places(schema) == [], tool["name"]
        run = schema["properties"].get("run")
        if run is not None:
            assert not re.fullmatch(run["pattern"], "../x")
            assert not re.fullmatch(run["pattern"], "/tmp/x")
    planted = {"properties": {"to": {"type": "string", "description": "where it goes"}}}
    assert _places(planted) == ["to"]


def test_outputs_hold_no_secret_and_no_control_character(tmp_path: Path) -> None:
    """A secret that an agent wrote into its question (stored as written: the run's
    environment lacked it) never reaches a tool's answer when the server's environment holds
    it, nor does its escape sequence, and a store URL's password never reaches a refusal;
    agents' words come fenced under a line saying so."""
    root = make_workspace(
        tmp_path / "ws",
        scripts={"s.toml": then_finish("development", ASKS)},
        agents={"main": scripted("s.toml")},
        extra="[loop]\nhuman_timeout_s = 300\n",
    )
    running = start_ralph("run", "--plain", cwd=root)
    try:
        wait_for(lambda: asked_question(root), "no question was asked", alive=running)
    finally:
        running.kill()
        running.communicate(timeout=30)
    calls: Calls = [
        ("list_runs", {}),
        ("run_status", {}),
        ("run_report", {"run": "nope"}),
    ]
    with_secret = {"DEMO_API_TOKEN": SECRET}
    results = control(root, calls, env=with_secret)
    for _error, text in results:
        assert SECRET not in text, text
        assert "\x1b" not in text, text
    status = results[1][1]
    assert "[redacted:DEMO_API_TOKEN]\\x1b]0;pwned\\x07" in status
    assert "agents' words among it" in status.splitlines()[0]
    assert "```text" in status
    (run_id, _question) = asked_question(root) or ("", "")
    ((error, report),) = control(root, [("run_report", {"run": run_id})], env=with_secret)
    assert not error
    assert SECRET not in report
    url = "postgresql://ralph:hunter2-password@127.0.0.1:9/nowhere"
    refusals = control(
        root, [("list_runs", {}), ("guide", {"run": "r", "text": "t"})], "--store", url
    )
    assert all(error for error, _ in refusals), refusals
    for _error, text in refusals:
        assert "hunter2-password" not in text, text
    assert os.environ.get("DEMO_API_TOKEN") is None  # the run itself never had it


def test_a_bug_in_a_tool_is_answered_and_logged_with_its_secret_masked(tmp_path: Path) -> None:
    """A store row a tool cannot read (a run's head holding a secret where a number belongs)
    fails the tool with a bug's message, and neither the answer nor the traceback on stderr
    shows the secret or its escape sequence (before: ``repr(error)`` and a raw traceback)."""
    root = make_workspace(
        tmp_path / "ws", scripts={"s.toml": FINISH_EVERYTHING}, agents={"main": scripted("s.toml")}
    )
    assert ralph("run", cwd=root).returncode == 0
    with sqlite3.connect(WorkspaceLayout(root=root).store) as db:
        db.execute("UPDATE runs SET head = ?", (f"token {SECRET}\x1b]0;pwned\x07",))
    lines = [*HELLO, request(1, "tools/call", name="list_runs", arguments={})]
    done = subprocess.run(
        [*RALPH, "mcp", "--control", "-C", str(root)],
        input=b"".join(json.dumps(m).encode() + b"\n" for m in lines),
        cwd=root,
        env={**ENV, "DEMO_API_TOKEN": SECRET},
        capture_output=True,
        timeout=180,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout.splitlines()[-1])["result"]
    assert result["isError"]
    text = result["content"][0]["text"]
    assert "ValueError" in text, text
    assert "[redacted:DEMO_API_TOKEN]" in text, text
    for output in (text.encode(), done.stdout, done.stderr):
        assert SECRET.encode() not in output
    assert b"\x1b" not in done.stdout
    assert b"ValueError" in done.stderr  # the bug is still reported where a person looks
