"""``ralph mcp``'s agent tools against cards written by hand: each through the ``mcp`` SDK's
client and as raw JSON-RPC lines, writing what the shell commands write, refusing what the
run would refuse or ignore, and answering any arguments without a crash."""

from __future__ import annotations

import json
import resource
import signal
import subprocess
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pipeline.core._note_rules import new_id
from tests.cli.mcp_driving import (
    ENV,
    EVENTS,
    HELLO,
    RALPH,
    RUN,
    Calls,
    Results,
    card_for,
    lines_of,
    raw,
    raw_calls,
    request,
    sdk_calls,
)

TOOLS = (
    "emit",
    "ask_person",
    "keep_memory",
    "forget_memory",
    "list_memories",
    "add_task",
    "start_task",
    "finish_task",
    "block_task",
    "list_tasks",
    "run_status",
)


@pytest.fixture(params=["sdk", "raw"])
def call(request: pytest.FixtureRequest, tmp_path: Path) -> Any:
    """``call(calls, **card)``: ``calls`` to one server over a card with ``card`` replaced,
    through the SDK's client or as raw lines."""
    through = sdk_calls if request.param == "sdk" else raw_calls

    def calling(calls: Calls, **card: Any) -> Results:
        return through(card_for(tmp_path, **card), calls, tmp_path)

    return calling


def _without_time(lines: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{k: v for k, v in line.items() if k != "ts"} for line in lines]


def _shell(tmp_path: Path, *argv: str) -> None:
    env = {**ENV, "RALPH_EVENTS_FILE": str(tmp_path / EVENTS)}
    subprocess.run([*RALPH, *argv], cwd=tmp_path, env=env, check=True, capture_output=True)


def test_tools_list_names_every_tool_with_described_closed_schemas(tmp_path: Path) -> None:
    """Every tool is listed, and each schema is a closed object whose properties say what
    they are."""
    answers = raw([], [*HELLO, request(1, "tools/list")], tmp_path)
    tools = answers[1]["result"]["tools"]
    assert tuple(t["name"] for t in tools) == TOOLS
    for tool in tools:
        schema = tool["inputSchema"]
        assert schema["type"] == "object"
        assert schema["additionalProperties"] is False
        assert all(rule["description"] for rule in schema["properties"].values())


def test_emit_writes_the_line_ralph_emit_writes(call: Any, tmp_path: Path) -> None:
    """A topic published through the tool is the line ``ralph emit`` writes, but for its
    time; text stays text, JSON stays structured."""
    payload = {"a": [1, "x", None], "b": "ü"}
    results = call([("emit", {"topic": "build.done", "payload": payload})])
    results += call([("emit", {"topic": "build.note", "payload": "some text"})])
    assert results == [(False, "Published build.done."), (False, "Published build.note.")]
    _shell(tmp_path, "emit", "build.done", "--json", json.dumps(payload))
    _shell(tmp_path, "emit", "build.note", "some text")
    served, shell = lines_of(tmp_path)[:2], lines_of(tmp_path)[2:]
    assert _without_time(served) == _without_time(shell)


def test_emit_outside_the_hats_scope_is_refused_and_writes_nothing(
    call: Any, tmp_path: Path
) -> None:
    """A topic the hat may not publish is refused, saying what it may; unenforced, the same
    topic is written."""
    results = call([("emit", {"topic": "deploy.now"})])
    assert results == [
        (
            True,
            "not written: the builder hat publishes only build.**, task.**, human.interact; "
            "ralph ignores deploy.now",
        )
    ]
    assert lines_of(tmp_path) == []
    assert call([("emit", {"topic": "deploy.now"})], publishing={"enforced": False}) == [
        (False, "Published deploy.now.")
    ]


def test_the_completion_and_cancellation_promises_pass_the_scope(call: Any, tmp_path: Path) -> None:
    """The promises are written whatever the hat's scope, and the completion claim says
    what the run still requires before it accepts it."""
    results = call(
        [("emit", {"topic": "LOOP_COMPLETE"}), ("emit", {"topic": "LOOP_CANCEL"})],
        publishing={"publishes": ["build.done"]},
    )
    assert results == [
        (
            False,
            "Published LOOP_COMPLETE; ralph refuses this claim until these are published: "
            "review.done.",
        ),
        (False, "Published LOOP_CANCEL."),
    ]
    assert [line["topic"] for line in lines_of(tmp_path)] == ["LOOP_COMPLETE", "LOOP_CANCEL"]


def test_bad_arguments_are_tool_errors(call: Any, tmp_path: Path) -> None:
    """No topic, an empty segment, 201 characters, a payload over the line limit, an
    unknown argument, a tag that is no id, a payload no reader could read: each a tool error
    with its reason, and nothing written."""
    line = {"topic": "build.x", "payload": "x" * 300, "ts": "2026-11-29T06:15:00.000Z"}
    line_bytes = len(json.dumps(line, separators=(",", ":"))) + 1
    results = call(
        [
            ("emit", {}),
            ("emit", {"topic": "a..b"}),
            ("emit", {"topic": "t" * 201}),
            ("emit", {"topic": "build.x", "payload": "x" * 300}),
            ("emit", {"topic": "build.x", "colour": "red"}),
            ("keep_memory", {"text": "hi", "tags": ["no way"]}),
            ("emit", {"topic": "build.x", "payload": 10**400}),
        ],
        limits={"lines": 10, "bytes": 10_000, "line_bytes": 200},
    )
    assert all(error for error, _ in results)
    assert [text for _, text in results] == [
        "the argument 'topic' is required",
        "topic 'a..b' has an empty segment (a leading, trailing or double '.')",
        "topic is 201 characters, over 200",
        f"not written: the line would be {line_bytes} bytes, over the 200 it may take (a "
        "topic's line may take 200 bytes, and a turn's 10000; this turn has written 0)",
        "unknown argument 'colour': this tool takes topic, payload",
        "tags[0] 'no way' does not match ^[A-Za-z0-9][A-Za-z0-9._-]{0,39}$",
        "not written: the payload is not a JSON value: int too large to convert to float "
        "(a topic's line may take 200 bytes, and a turn's 10000; this turn has "
        "written 0)",
    ]
    assert lines_of(tmp_path) == []


def test_a_turns_lines_and_bytes_stay_within_the_limits(call: Any, tmp_path: Path) -> None:
    """The lines and bytes one server writes are held to the run's intake limits for the
    turn: the topic that would pass them is refused and not written."""
    by_bytes = call(
        [("emit", {"topic": "build.a", "payload": "x" * 100})] * 3,
        limits={"lines": 10, "bytes": 350, "line_bytes": 200},
    )
    assert [error for error, _ in by_bytes] == [False, False, True]
    assert by_bytes[2][1].startswith("not written: the line would be ")
    assert by_bytes[2][1].endswith("a turn's 350; this turn has written 330)")
    by_lines = call([("emit", {"topic": "build.b"})] * 3, limits={"lines": 2})
    assert by_lines[2] == (True, "not written: this turn has written 2 topics, the limit")
    assert len(lines_of(tmp_path)) == 4


def test_ask_person_publishes_human_interact_once_per_invocation(call: Any, tmp_path: Path) -> None:
    """A question is the ``human.interact`` topic with the question, as the run reads it;
    a second in the same turn is refused, since the run keeps one pending."""
    results = call([("ask_person", {"question": "Which key?"})] * 2)
    assert results[0] == (
        False,
        "Asked. ralph asks the person when your turn ends and waits; the answer comes in your "
        "next prompt. End your turn if you cannot go on without it.",
    )
    assert results[1][0] is True
    assert "you asked already in this turn" in results[1][1]
    assert _without_time(lines_of(tmp_path)) == [
        {"topic": "human.interact", "payload": {"question": "Which key?"}}
    ]


def test_ask_person_is_refused_when_the_run_asks_no_one(call: Any, tmp_path: Path) -> None:
    """With questions off, or ``human.interact`` outside the hat's scope, nothing is asked."""
    off = call([("ask_person", {"question": "Q?"})], publishing={"human_topic": None})
    assert off == [(True, "asking a person is off in this run: [loop] human_timeout_s = 0")]
    scoped = call([("ask_person", {"question": "Q?"})], publishing={"publishes": ["build.**"]})
    assert scoped == [
        (True, "not written: the builder hat publishes only build.**; ralph ignores human.interact")
    ]
    assert lines_of(tmp_path) == []


def test_memory_tools_write_what_ralph_memory_writes(call: Any, tmp_path: Path) -> None:
    """``keep_memory`` and ``forget_memory`` write the lines of ``ralph memory add`` and
    ``remove``, outside the hat's scope as notes are."""
    results = call(
        [
            ("keep_memory", {"text": " use uv ", "tags": ["builder"]}),
            ("forget_memory", {"id": "m-1"}),
        ],
        publishing={"publishes": ["build.done"]},
    )
    kept = f"Memory {new_id('m', 'use uv')} kept."
    assert results == [(False, kept), (False, "Memory m-1 removed.")]
    _shell(tmp_path, "memory", "add", " use uv ", "--tag", "builder")
    _shell(tmp_path, "memory", "remove", "m-1")
    lines = _without_time(lines_of(tmp_path))
    assert lines[:2] == lines[2:]


def test_task_tools_write_what_ralph_task_writes(call: Any, tmp_path: Path) -> None:
    """``add_task``, ``start_task``, ``finish_task`` and ``block_task`` write the lines of
    ``ralph task add``, ``start``, ``done`` and ``block``."""
    results = call(
        [
            ("add_task", {"title": "wire it"}),
            ("start_task", {"id": "t-1"}),
            ("finish_task", {"id": "t-1"}),
            ("block_task", {"id": "t-2", "reason": "no key"}),
        ]
    )
    assert [text for _, text in results] == [
        f"Task {new_id('t', 'wire it')} added.",
        "Task t-1 start.",
        "Task t-1 done.",
        "Task t-2 blocked.",
    ]
    _shell(tmp_path, "task", "add", "wire it")
    _shell(tmp_path, "task", "start", "t-1")
    _shell(tmp_path, "task", "done", "t-1")
    _shell(tmp_path, "task", "block", "t-2", "--reason", "no key")
    lines = _without_time(lines_of(tmp_path))
    assert lines[:4] == lines[4:]


def test_lists_show_the_card_and_this_invocations_notes(call: Any) -> None:
    """The listings show the card's memories and tasks fenced under their authors, what
    was left out, and this turn's own notes as reaching the next prompt."""
    memories, tasks = (
        text
        for _, text in call(
            [
                ("keep_memory", {"text": "use uv"}),
                ("add_task", {"title": "test it"}),
                ("list_memories", {}),
                ("list_tasks", {}),
            ]
        )[2:]
    )
    assert "Memory m-1, for every hat, written by the reviewer agent in run r0:" in memories
    assert "````text\nuse ```x```\n````" in memories
    assert memories.endswith(f"Memory {new_id('m', 'use uv')} kept. (from your next prompt)")
    assert "Task t-1, blocked, added by the person:\n\n```text\nwire it\n```" in tasks
    assert "Why it is blocked:\n\n```text\nno key\n```" in tasks
    assert "(2 more are not shown to this prompt.)" in tasks
    assert tasks.endswith("(from your next prompt)")
    assert call([("list_memories", {})], memories=[]) == [(False, "No memories.")]


def test_run_status_says_phase_iteration_requirements_and_budget_left(call: Any) -> None:
    """The status is the card's standing and publishing, in words."""
    ((error, text),) = call([("run_status", {})])
    assert not error
    assert text.splitlines() == [
        "Run 20261129-061500-a1b2c3: the developer, hat builder, development.",
        "Phase development, step invoke, iteration 2/10.",
        "Review pass 1/3.",
        "Cost $0.12 of $5.00.",
        "Your hat publishes (only these): build.**, task.**, human.interact.",
        "To finish, publish LOOP_COMPLETE; required first: review.done.",
        "You can ask a person: yes.",
    ]


def test_a_prompt_that_asks_for_a_file_only_refuses_every_topic_but_notes(
    call: Any, tmp_path: Path
) -> None:
    """A card without publishing (a commit message prompt) refuses a topic, which the run
    would not act on, and takes a memory or task note, which steers nothing."""
    results = call(
        [("emit", {"topic": "build.done"}), ("add_task", {"title": "x"})], publishing=None
    )
    reason = "this prompt asks only for a file; ralph takes only memory and task notes from it"
    assert results[0] == (True, reason)
    assert results[1][0] is False
    assert [line["topic"] for line in lines_of(tmp_path)] == ["ralph.task.add"]


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        ({"events_file": "../outside.jsonl"}, "climbs out with '..'"),
        ({"events_file": ".ralph/sub/x.jsonl"}, "not directly in .ralph/"),
        ({"events_file": "/etc/x.jsonl"}, "names an absolute path"),
        ({"card": 2}, "card version 2; this ralph reads version 1"),
        ({"colour": "red"}, "Extra fields in constructor for Card: colour"),
        ({"memories_left_out": "3"}, "expected an integer"),
    ],
)
def test_a_card_naming_a_file_outside_ralph_is_refused(
    tmp_path: Path, change: dict[str, Any], reason: str
) -> None:
    """A card whose events file is not one ``.ralph/*.jsonl`` file, or that is no card of
    this shape, turns every call into an error naming the card, and nothing is written."""
    card = card_for(tmp_path, **change)
    ((error, text),) = raw_calls(card, [("emit", {"topic": "build.done"})], tmp_path)
    assert error
    assert text.startswith(f"the card {card} is not a card: ")
    assert reason in text
    assert not list(tmp_path.rglob("*.jsonl"))


def test_a_card_that_is_a_link_missing_or_no_json_is_refused(tmp_path: Path) -> None:
    """A link to a card, a card outside ``.ralph/``, a missing card and one that is no JSON
    are each refused by name."""
    real = card_for(tmp_path)
    link = real.with_name("mcp-link.json")
    link.symlink_to(real)
    outside = tmp_path / "card.json"
    outside.write_bytes(real.read_bytes())
    garbled = real.with_name("mcp-bad.json")
    garbled.write_text("{")
    expected = {
        link: f"the card {link}: {link} is a symbolic link",
        outside: f"{outside} is not in a workspace's .ralph/, where ralph writes cards",
        real.with_name("mcp-none.json"): f"no card at {real.with_name('mcp-none.json')}",
        garbled: f"the card {garbled} is no JSON",
    }
    for card, reason in expected.items():
        ((error, text),) = raw_calls(card, [("run_status", {})], tmp_path)
        assert error
        assert text.startswith(reason), text
    assert lines_of(tmp_path) == []


def test_a_full_disk_is_a_tool_error(tmp_path: Path) -> None:
    """A write the disk has no room for (``RLIMIT_FSIZE``, as on a full disk) is a tool
    error, and the server goes on."""
    card = card_for(tmp_path)

    def limited() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (100, 100))

    calls = [
        request(1, "tools/call", name="emit", arguments={"topic": "build.x", "payload": "x" * 200}),
        request(2, "ping"),
    ]
    answers = raw(["--card", str(card)], [*HELLO, *calls], tmp_path, preexec_fn=limited)
    result = answers[1]["result"]
    assert result["isError"] is True
    assert "the disk is full" in result["content"][0]["text"]
    assert answers[2]["result"] == {}
    assert lines_of(tmp_path) == []


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(), inner, max_size=3),
    max_leaves=8,
)
_ARGUMENTS = st.dictionaries(
    st.sampled_from(["topic", "payload", "question", "text", "tags", "id", "title", "reason", "x"]),
    _JSON | st.sampled_from(["build.done", "t-1", "LOOP_COMPLETE"]),
    max_size=4,
)


def test_any_arguments_give_a_result_never_a_crash(tmp_path: Path) -> None:
    """Whatever JSON arguments any tool gets, the server answers with a tool result (never
    a JSON-RPC error, never a traceback) and stays up."""
    card = card_for(tmp_path, limits={"lines": 100_000, "bytes": 1 << 30, "line_bytes": 1 << 20})
    server = subprocess.Popen(
        [*RALPH, "mcp", "--card", str(card)],
        cwd=tmp_path,
        env=ENV,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert server.stdin is not None
    assert server.stdout is not None

    @settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(tool=st.sampled_from(TOOLS), arguments=_ARGUMENTS)
    def answered(tool: str, arguments: dict[str, Any]) -> None:
        line = request(1, "tools/call", name=tool, arguments=arguments)
        assert server.stdin is not None
        assert server.stdout is not None
        server.stdin.write(json.dumps(line).encode() + b"\n")
        server.stdin.flush()
        answer = json.loads(server.stdout.readline())
        assert isinstance(answer["result"]["isError"], bool), answer
        assert answer["result"]["content"][0]["text"]

    try:
        answered()
        assert server.poll() is None
    finally:
        server.stdin.close()
        server.wait(timeout=30)
    assert server.stderr is not None
    assert server.stderr.read() == b""
    assert server.returncode == 0


def test_links_where_the_server_reads_or_writes_are_refused(tmp_path: Path) -> None:
    """An events file that is a link out of the workspace is not written through, and a
    ``.ralph`` that is a link elsewhere yields no card: the server follows no link, as
    ``ralph emit`` follows none."""
    outside = tmp_path / "outside"
    outside.mkdir()
    workspace = tmp_path / "ws"
    card = card_for(workspace)
    (workspace / EVENTS).symlink_to(outside / "stolen.jsonl")
    ((error, text),) = raw_calls(card, [("emit", {"topic": "build.done"})], workspace)
    assert error
    assert text.startswith(f"not written: {workspace / EVENTS} is a symbolic link")
    moved = tmp_path / "elsewhere"
    (workspace / ".ralph").rename(moved)
    (workspace / ".ralph").symlink_to(moved)
    ((error, text),) = raw_calls(card, [("run_status", {})], workspace)
    assert error
    assert text.startswith(f"the card {card}: ")
    assert "symbolic link" in text
    assert not (outside / "stolen.jsonl").exists()


def test_the_card_is_found_from_the_runs_environment(tmp_path: Path) -> None:
    """Without ``--card`` the card is the one of ``RALPH_RUN_ID`` in the workspace; a run
    id that is no id (a path) finds none."""
    card_for(tmp_path)
    lines = [*HELLO, request(1, "tools/call", name="run_status", arguments={})]
    data = b"".join(json.dumps(m).encode() + b"\n" for m in lines)
    texts = []
    for run in (RUN, f"../{RUN}"):
        env = {**ENV, "RALPH_RUN_ID": run, "RALPH_WORKSPACE_ROOT": str(tmp_path)}
        done = subprocess.run(
            [*RALPH, "mcp"], input=data, cwd=tmp_path, env=env, capture_output=True, check=True
        )
        texts.append(json.loads(done.stdout.splitlines()[1])["result"]["content"][0]["text"])
    assert texts[0].startswith(f"Run {RUN}: the developer")
    assert texts[1].startswith("no card:")
