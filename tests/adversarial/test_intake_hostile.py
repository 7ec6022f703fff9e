"""Hostile agents against the intake: shell-script agents that truncate, replace, flood and
plant links and wrong types in what ralph reads, through real `ralph run` and `ralph resume`."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import orjson
import pytest

from pipeline.events import (
    EventsFileRead,
    EventsFileTruncated,
    OutputLineMalformed,
    PipelineEvent,
    ResponseSubmitted,
    TopicPublished,
)
from pipeline.handlers.intake import read_agent_events, write_marker
from pipeline.handlers.runtime import WorkspaceLayout
from pipeline.handlers.store import SqliteEventStore
from tests.runtime.workspace import COUNT_CALLS, RALPH, ROOT, SHELL_REPORTS, make_workspace, ralph

pytestmark = pytest.mark.slow  # whole runs in subprocesses: seconds a test


def _workspace(root: Path, body: str, budgets: str = "") -> Path:
    root.mkdir(parents=True)
    script = root.parent / "agent.sh"  # outside the repository: not a change to commit
    script.write_text("#!/bin/sh\nset -e\n" + COUNT_CALLS + body)
    script.chmod(0o755)
    limits = "max_retries_per_agent = 1\nbackoff_base_ms = 10\nbackoff_cap_ms = 20\n" + budgets
    return make_workspace(root, scripts={}, agents={"main": [str(script)]}, budgets=limits)


def _stored(root: Path) -> tuple[list[PipelineEvent], list[bytes]]:
    """The one run's events, and each stored row's body as bytes."""
    with SqliteEventStore(WorkspaceLayout(root=root).store) as store:
        (run,) = store.runs()
        events = list(store.read(run.run_id))
    import sqlite3

    with sqlite3.connect(WorkspaceLayout(root=root).store) as db:
        bodies = [bytes(row[0]) for row in db.execute("SELECT body FROM events")]
    return events, bodies


def test_an_events_file_rewritten_shorter_is_read_again_and_the_run_completes(
    tmp_path: Path,
) -> None:
    """The second call rewrites the events file with `>` (shorter than what was read): the
    run records EventsFileTruncated, reads the new line, and completes (before: it ended with
    workspace_error, "Resume it", and every resume failed the same way)."""
    root = _workspace(
        tmp_path / "ws",
        'if [ "$n" -eq 1 ]; then\n'
        '  ralph emit first.one "a long payload to make the file long"\n'
        '  ralph emit first.two "another long payload"\n'
        "fi\n"
        'if [ "$n" -eq 2 ]; then\n'
        '  printf \'{"topic": "again"}\\n\' > "$RALPH_EVENTS_FILE"\n'
        "fi\n" + SHELL_REPORTS,
    )
    done = ralph("run", cwd=root)
    assert done.returncode == 0, done.stdout + done.stderr
    events, _ = _stored(root)
    truncated = [e for e in events if isinstance(e, EventsFileTruncated)]
    assert len(truncated) == 1
    assert truncated[0].size == len(b'{"topic": "again"}\n')
    topics = [(e.topic, e.line_number) for e in events if isinstance(e, TopicPublished)]
    assert topics == [("first.one", 1), ("first.two", 2), ("again", 3)]
    resumed = ralph("resume", cwd=root)
    assert "workspace_error" not in resumed.stdout + resumed.stderr


def test_an_events_file_replaced_by_a_link_to_a_secret_is_not_read(tmp_path: Path) -> None:
    """The agent replaces its events file by a symbolic link to a file outside the workspace
    holding a valid line: nothing of it reaches the log or a prompt; each read is a
    malformed-line fact saying the file is a link, so the run ends validation_failure (before:
    the secret was a topic in the log and in the next prompt)."""
    secret = tmp_path / "secret.jsonl"
    secret.write_text('{"topic": "leak", "payload": "TOPSECRET"}\n')
    root = _workspace(
        tmp_path / "ws",
        f'rm -f "$RALPH_EVENTS_FILE"\nln -s {secret} "$RALPH_EVENTS_FILE"\nexit 1\n',
    )
    done = ralph("run", cwd=root)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "validation_failure" in done.stdout
    events, bodies = _stored(root)
    assert not any(b"TOPSECRET" in body for body in bodies)
    refusals = [e for e in events if isinstance(e, OutputLineMalformed)]
    assert refusals
    assert all("symbolic link" in e.error for e in refusals)
    prompts = [p.read_text() for p in (root / ".ralph").glob("prompt-*.md")]
    assert not any("TOPSECRET" in p for p in prompts)
    assert any("symbolic link" in p for p in prompts[1:]) or len(prompts) > 1


def test_a_flood_of_lines_and_a_huge_line_are_summed_up_not_stored(tmp_path: Path) -> None:
    """One call writes a 10 MB line and 100,000 distinct lines: the log keeps one fact for
    the long line (its start only), at most 1,000 lines, and one fact for the rest; no
    stored row is near the size of what was written; the run completes (before: 100,000
    facts, and the 10 MB line stored whole)."""
    root = _workspace(
        tmp_path / "ws",
        'if [ "$n" -eq 1 ]; then\n'
        '  python3 -c \'import sys; sys.stdout.write("x" * 10_000_000 + "\\n")\''
        ' >> "$RALPH_EVENTS_FILE"\n'
        '  seq 1 100000 | sed \'s/.*/{"topic": "n", "payload": &}/\''
        ' >> "$RALPH_EVENTS_FILE"\n'
        "fi\n" + SHELL_REPORTS,
    )
    done = ralph("run", cwd=root, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    events, bodies = _stored(root)
    assert max(len(body) for body in bodies) < 100_000
    assert len(events) < 2_000
    malformed = [e for e in events if isinstance(e, OutputLineMalformed)]
    long_line, summary = malformed
    assert long_line.line_number == 1
    assert "longer than the 65536 bytes" in long_line.error
    assert len(long_line.content) <= 200
    assert summary.line_number == 1_001
    assert summary.error.startswith("lines 1001-100001 (99001 lines, ")
    topics = [e for e in events if isinstance(e, TopicPublished)]
    assert len(topics) == 999
    (read,) = [e for e in events if isinstance(e, EventsFileRead)][:1]
    assert read.lines == 100_001


def _emit(
    *args: str, cwd: Path, env: dict[str, str] | None = None, stdin: bytes = b""
) -> subprocess.CompletedProcess[bytes]:
    base = {k: v for k, v in os.environ.items() if not k.startswith("RALPH_")}
    return subprocess.run(
        [*RALPH, "emit", *args],
        cwd=cwd,
        env={**base, "PYTHONPATH": str(ROOT), **(env or {})},
        input=stdin,
        capture_output=True,
        timeout=60,
    )


def test_ralph_emit_outside_a_run_refuses_and_creates_nothing(tmp_path: Path) -> None:
    """No RALPH_EVENTS_FILE and no marker: a clear error, a non-zero exit, and no .ralph/
    folder or events file made (before: exit 0 and ./.ralph/events.jsonl created)."""
    done = _emit("build.done", "x", cwd=tmp_path)
    assert done.returncode != 0
    assert b"no run to emit to" in done.stderr
    assert list(tmp_path.iterdir()) == []


def test_ralph_emit_follows_no_link_out_of_the_workspace(tmp_path: Path) -> None:
    """The marker names .ralph/link.jsonl, a link to a file outside: emit refuses, saying so,
    and the file outside is untouched (before: the line was appended there)."""
    root = tmp_path / "ws"
    (root / ".ralph").mkdir(parents=True)
    outside = tmp_path / "outside.jsonl"
    outside.write_bytes(b"")
    (root / ".ralph" / "link.jsonl").symlink_to(outside)
    write_marker(root, root / ".ralph" / "link.jsonl")
    done = _emit("build.done", "x", cwd=root)
    assert done.returncode == 1
    assert done.stderr.startswith(b"error: not written: ")
    assert b"symbolic link" in done.stderr
    assert outside.read_bytes() == b""


def test_ralph_emit_refuses_a_fifo_at_once_and_bad_topics(tmp_path: Path) -> None:
    """A FIFO as the events file is refused at once (before: emit hung for ever); so are an
    empty topic segment and a topic over 200 characters, writing nothing."""
    target = tmp_path / "events.jsonl"
    os.mkfifo(target)
    env = {"RALPH_EVENTS_FILE": str(target)}
    done = _emit("build.done", "x", cwd=tmp_path, env=env)
    assert done.returncode == 1
    assert b"is a FIFO" in done.stderr
    target.unlink()
    target.write_bytes(b"")
    for topic in ("..", ".a", "a.", "a..b", "t" * 201):
        refused = _emit(topic, "x", cwd=tmp_path, env=env)
        assert refused.returncode == 2, topic
        assert refused.stderr.startswith(b"error:")
    assert target.read_bytes() == b""
    assert _emit("t" * 200, cwd=tmp_path, env=env).returncode == 0


def test_ralph_emit_takes_a_large_payload_from_stdin_or_a_file(tmp_path: Path) -> None:
    """A 300 KB payload, over what argv can carry: from stdin with `-` and from --file,
    JSON or text, each one whole line."""
    target = tmp_path / "events.jsonl"
    env = {"RALPH_EVENTS_FILE": str(target)}
    big = {"text": "y" * 300_000}
    piped = _emit("big.json", "-", "--json", cwd=tmp_path, env=env, stdin=orjson.dumps(big))
    assert piped.returncode == 0, piped.stderr
    payload = tmp_path / "payload.txt"
    payload.write_text("z" * 300_000)
    filed = _emit("big.text", "--file", str(payload), cwd=tmp_path, env=env)
    assert filed.returncode == 0, filed.stderr
    first, second = (orjson.loads(line) for line in target.read_bytes().splitlines())
    assert (first["topic"], first["payload"]) == ("big.json", big)
    assert (second["topic"], second["payload"]) == ("big.text", "z" * 300_000)


def test_ralph_emit_never_joins_another_writers_unfinished_line(tmp_path: Path) -> None:
    """A writer left `{"topic": "a"` without its end: emit's line starts on a line of its
    own (the unfinished one becomes one malformed line); a raw write that completes an
    unfinished line still makes one line with it."""
    target = tmp_path / "events.jsonl"
    env = {"RALPH_EVENTS_FILE": str(target)}
    target.write_bytes(b'{"topic": "a"')
    assert _emit("b", cwd=tmp_path, env=env).returncode == 0
    with target.open("ab") as handle:
        handle.write(b'{"topic": "c"')
        handle.write(b', "payload": 1}\n')

    def at() -> object:
        from datetime import UTC, datetime

        return datetime.now(UTC)

    facts = read_agent_events(target, 0, 0, at)  # type: ignore[arg-type]
    topics = [(f.topic, f.line_number) for f in facts if isinstance(f, TopicPublished)]
    malformed = [f.line_number for f in facts if isinstance(f, OutputLineMalformed)]
    assert topics == [("b", 2), ("c", 3)]
    assert malformed == [1]


def test_wrong_types_at_ralphs_paths_stop_no_run_for_good(tmp_path: Path) -> None:
    """The first call makes `.ralph/agent-group.json`, the marker and its events file
    directories: the run is not stopped by any (before: every `ralph run` and `ralph resume`
    ended with exit 2); the events file's refusal is a malformed-line fact naming the
    directory, and once the agent removes it, its later lines are read; a resume, which
    writes the marker again, is not stopped either."""
    root = _workspace(
        tmp_path / "ws",
        'if [ "$n" -eq 1 ]; then\n'
        '  rm -f .ralph/agent-group.json .ralph/current-events "$RALPH_EVENTS_FILE"\n'
        '  mkdir .ralph/agent-group.json .ralph/current-events "$RALPH_EVENTS_FILE"\n'
        "  exit 1\n"
        "fi\n"
        'rmdir "$RALPH_EVENTS_FILE" 2>/dev/null || true\n'
        "ralph emit fixed.it\n" + SHELL_REPORTS,
    )
    done = ralph("run", cwd=root)
    assert done.returncode == 0, done.stdout + done.stderr
    events, _ = _stored(root)
    refusals = [e for e in events if isinstance(e, OutputLineMalformed)]
    assert len(refusals) == 1
    assert "is a directory" in refusals[0].error
    assert any(isinstance(e, TopicPublished) and e.topic == "fixed.it" for e in events)
    assert (root / ".ralph" / "agent-group.json").is_dir()
    resumed = ralph("resume", cwd=root)
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert "error" not in resumed.stderr


def test_the_limits_are_read_from_ralph_toml(tmp_path: Path) -> None:
    """`[budgets] max_event_lines = 3, max_event_line_bytes = 30`: a 50-byte line is one
    malformed fact, the next two lines are topics, and one fact sums up the three after."""
    root = _workspace(
        tmp_path / "ws",
        'if [ "$n" -eq 1 ]; then\n'
        '  printf \'{"topic": "long", "payload": "0123456789012345"}\\n\''
        ' >> "$RALPH_EVENTS_FILE"\n'
        '  for t in b c d e f; do printf \'{"topic": "%s"}\\n\' $t'
        ' >> "$RALPH_EVENTS_FILE"; done\n'
        "fi\n" + SHELL_REPORTS,
        budgets="max_event_lines = 3\nmax_event_line_bytes = 30\n",
    )
    done = ralph("run", cwd=root)
    assert done.returncode == 0, done.stdout + done.stderr
    events, _ = _stored(root)
    topics = [e.topic for e in events if isinstance(e, TopicPublished)]
    malformed = [e for e in events if isinstance(e, OutputLineMalformed)]
    assert topics == ["b", "c"]
    assert [m.line_number for m in malformed] == [1, 4]
    assert "longer than the 30 bytes" in malformed[0].error
    assert malformed[1].error.startswith("lines 4-6 (3 lines, ")


def test_reports_and_prompts_are_read_and_written_through_no_link(tmp_path: Path) -> None:
    """The planner plants a folder where the developer's prompt goes; the developer's first
    status report is a link to a secret outside the workspace. The prompt is written anyway
    (the folder moved aside), the linked report is refused and never read, and the run goes
    on to complete (before: workspace_error on every resume, and the secret in the log)."""
    secret = tmp_path / "secret.txt"
    secret.write_text("completed\nTOP-SECRET-VALUE-42\n")
    root = _workspace(
        tmp_path / "ws",
        SHELL_REPORTS + 'if [ "$n" -eq 1 ]; then\n'
        "  rm -f .agent/prompts/development.md\n"
        "  mkdir -p .agent/prompts/development.md\n"
        "fi\n"
        'if [ "$n" -eq 2 ]; then\n'
        f"  rm -f .agent/out/status; ln -s {secret} .agent/out/status\n"
        "fi\n",
        budgets="max_consecutive_malformed = 5\n",
    )
    done = ralph("run", cwd=root)
    assert done.returncode == 0, done.stdout + done.stderr
    _events, bodies = _stored(root)
    assert not [body for body in bodies if b"TOP-SECRET-VALUE-42" in body]
    prompts = root / ".agent" / "prompts"
    assert (prompts / "development.md").is_file()
    assert [p.name for p in prompts.iterdir() if p.name.startswith("development.md.moved-")]
    assert secret.read_text() == "completed\nTOP-SECRET-VALUE-42\n"
    assert b"TOP-SECRET-VALUE-42" not in (root / ".ralph" / "prompt-3.md").read_bytes()


def test_the_plan_is_written_and_read_through_no_agent_link(tmp_path: Path) -> None:
    """The planner swaps ``.agent/PLAN.md`` for a link to a file of the user's outside the
    work tree and the developer swaps it for a link to a secret: the user's file keeps its
    bytes and the secret reaches no later prompt (before: ralph wrote the agent's plan into
    the user's file and read the secret into the reviewer's prompt)."""
    victim = tmp_path / "bashrc"
    victim.write_text("# the user's own\n")
    secret = tmp_path / "credentials"
    secret.write_text("TOP-SECRET-PLAN-42\n")
    root = _workspace(
        tmp_path / "ws",
        SHELL_REPORTS
        + 'if [ "$n" -eq 1 ]; then rm -f .agent/PLAN.md; '
        + f"ln -s {victim} .agent/PLAN.md; fi\n"
        + 'if [ "$n" -eq 2 ]; then rm -f .agent/PLAN.md; '
        + f"ln -s {secret} .agent/PLAN.md; fi\n",
    )
    done = ralph("run", cwd=root)
    assert done.returncode == 0, done.stdout + done.stderr
    assert victim.read_text() == "# the user's own\n"
    prompts = sorted((root / ".ralph").glob("prompt-*.md"))
    assert len(prompts) >= 3
    assert "1. do it" in prompts[1].read_text()  # the developer was given the real plan
    assert not [p.name for p in prompts if "TOP-SECRET-PLAN-42" in p.read_text()]


def test_a_structured_response_replaced_by_a_link_to_a_secret_is_not_read(tmp_path: Path) -> None:
    """The developer, asked for a structured response, answers with a link to a secret outside
    the workspace (one a sandbox hides from it, and ralph can read): the secret reaches
    neither the log nor a correction prompt, whose response says it is a link (before: ralph
    read it through the link into ``ResponseSubmitted`` and the agent's next prompt)."""
    secret = tmp_path / "secret.json"
    secret.write_text('{"action": "TOP-SECRET-RESPONSE-42", "parameters": {}}\n')
    script = tmp_path / "agent.sh"  # outside the repository: not a change to commit
    script.write_text(
        "#!/bin/sh\nset -e\n"
        + COUNT_CALLS
        + SHELL_REPORTS
        + f"rm -f .agent/out/response.json; ln -s {secret} .agent/out/response.json\n"
    )
    script.chmod(0o755)
    root = make_workspace(
        tmp_path / "ws",
        scripts={},
        agents={"main": [str(script)]},
        budgets="max_retries_per_agent = 1\nbackoff_base_ms = 10\nbackoff_cap_ms = 20\n",
        extra='[hats.developer]\nresponse_schema = "agent-response"\n',
    )
    done = ralph("run", cwd=root)
    events, bodies = _stored(root)
    assert not [body for body in bodies if b"TOP-SECRET-RESPONSE-42" in body]
    # Three responses refused: the task waits for a person.
    assert done.returncode == 3, done.stdout + done.stderr
    responses = [e for e in events if isinstance(e, ResponseSubmitted)]
    assert responses
    assert all("symbolic link" in e.raw_response for e in responses)
    prompts = [p.read_text() for p in (root / ".ralph").glob("prompt-*.md")]
    assert len(prompts) >= 3
    assert not [p for p in prompts if "TOP-SECRET-RESPONSE-42" in p]


def test_the_completion_marker_is_written_through_no_agent_link(tmp_path: Path) -> None:
    """The developer swaps the completion marker for a link to a file of the user's outside
    the work tree, then fails until dev-fix ends the run: the marker is written in its place
    and the user's file keeps its bytes (before: ralph wrote the marker into it)."""
    victim = tmp_path / "bashrc"
    victim.write_text("# the user's own\n")
    root = _workspace(
        tmp_path / "ws",
        'case "$RALPH_PROMPT_KIND" in\n'
        "  development) mkdir -p .agent/tmp; rm -rf .agent/tmp/completion_marker\n"
        f"    ln -s {victim} .agent/tmp/completion_marker; exit 1 ;;\n"
        "  dev_fix) mkdir -p .agent/out; printf 'failed\\nit crashes' > .agent/out/status\n"
        "    exit 0 ;;\n"
        "esac\n" + SHELL_REPORTS,
    )
    done = ralph("run", cwd=root)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "agent_chain_exhausted" in done.stdout
    assert victim.read_text() == "# the user's own\n"
    marker = root / ".agent" / "tmp" / "completion_marker"
    assert not marker.is_symlink()
    assert "status=dev_fix_failed" in marker.read_text()
