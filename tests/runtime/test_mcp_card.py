"""The MCP card in real runs: `ralph run` writes each prompt's card, and its shell agent runs
`ralph mcp --card` speaking raw JSON-RPC lines, as an agent CLI would."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import attrs
import pytest

from pipeline.events import TopicPublished
from tests.runtime.workspace import (
    COUNT_CALLS,
    SHELL_REPORTS,
    make_workspace,
    ralph,
    stored_events,
)

pytestmark = pytest.mark.slow  # whole runs in subprocesses: seconds a test

CARD = '"$RALPH_WORKSPACE_ROOT/.ralph/mcp-$RALPH_RUN_ID.json"'


def _requests(*calls: tuple[str, dict[str, Any]]) -> str:
    """JSON-RPC lines: the handshake, then one ``tools/call`` per call."""
    lines: list[dict[str, Any]] = [
        {
            "jsonrpc": "2.0",
            "id": 0,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "a shell agent", "version": "1"},
            },
        },
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
    ]
    for number, (tool, arguments) in enumerate(calls, 1):
        params = {"name": tool, "arguments": arguments}
        lines.append({"jsonrpc": "2.0", "id": number, "method": "tools/call", "params": params})
    return "".join(json.dumps(line) + "\n" for line in lines)


def _agent(root: Path, body: str, requests: str) -> list[str]:
    # Outside the repository: an untracked file in it would make `ralph run` refuse the tree.
    (root.parent / "requests.jsonl").write_text(requests)
    script = root.parent / "agent.sh"
    script.write_text("#!/bin/sh\nset -e\n" + COUNT_CALLS + body + SHELL_REPORTS)
    script.chmod(0o755)
    return [str(script)]


# The agent keeps what it saw: its card as it found it, and the server's answers.
_SPEAK = (
    f'cp {CARD} ".ralph/card-$n.json" 2>/dev/null || true\n'
    f'"$RALPH_BIN" mcp --card {CARD} < "{{requests}}" > ".ralph/answers-$n.jsonl"\n'
)


def _answers(root: Path, call: int) -> dict[int, dict[str, Any]]:
    """The server's answers in call ``call``, by request id."""
    lines = (root / ".ralph" / f"answers-{call}.jsonl").read_text().splitlines()
    return {answer["id"]: answer for answer in map(json.loads, lines)}


def _text(answer: dict[str, Any]) -> tuple[bool, str]:
    result = answer["result"]
    return result.get("isError", False), result["content"][0]["text"]


def _calls(root: Path) -> int:
    return int((root / ".ralph" / "calls").read_text())


def test_an_agent_publishes_and_reads_its_status_through_ralph_mcp(tmp_path: Path) -> None:
    """In each turn the agent's `ralph mcp --card` publishes a topic that the run folds exactly
    as the same topic from `ralph emit`, and `run_status` tells that turn's role and
    iteration from a card rewritten for each prompt (holding no store and no question id);
    a memory kept through it in one turn is on the next turn's card."""
    root = tmp_path / "ws"
    root.mkdir()
    requests = _requests(
        ("emit", {"topic": "build.mcp", "payload": {"tests": 3}}),
        ("run_status", {}),
        ("keep_memory", {"text": "kept through mcp"}),
        ("list_memories", {}),
    )
    body = _SPEAK.format(requests=root.parent / "requests.jsonl")
    body += '"$RALPH_BIN" emit build.shell \'{"tests": 3}\' --json\n'
    make_workspace(root, scripts={}, agents={"main": _agent(root, body, requests)})
    done = ralph("run", cwd=root)
    assert done.returncode == 0, done.stdout + done.stderr
    cards = [json.loads((root / ".ralph" / f"card-{n}.json").read_text()) for n in range(1, 5)]
    # Each prompt's card is its own turn's, not one left over: planning, development, the
    # commit message (whose prompt reads no topic), review.
    turns = [(card["role"], card["prompt_kind"]) for card in cards]
    assert turns == [
        ("planner", "planning"),
        ("developer", "development"),
        ("committer", "commit_message"),
        ("reviewer", "review"),
    ]
    run_id = cards[0]["run"]
    for n, card in enumerate(cards, 1):
        assert card["events_file"] == f".ralph/events-{run_id}.jsonl"
        assert not {"workspace", "store", "question_id", "environment"} & card.keys()
        assert str(root) not in json.dumps(card)
        published = _text(_answers(root, n)[1])
        if card["publishing"] is None:
            assert published == (
                True,
                "this prompt asks only for a file; ralph takes only memory and task notes from it",
            )
        else:
            assert published == (False, "Published build.mcp.")
        error, status = _text(_answers(root, n)[2])
        assert not error
        assert status.startswith(f"Run {run_id}: the {card['role']}, ")
        standing = card["standing"]
        assert f"iteration {standing['iteration']}/{standing['max_iterations']}." in status
    assert [c["standing"]["iteration"] for c in cards] == [0, 1, 1, 1]
    assert cards[0]["memories"] == []
    (memory,) = cards[1]["memories"]
    assert (memory["text"], memory["by"], memory["run"]) == ("kept through mcp", "planner", run_id)
    listed = _text(_answers(root, 2)[4])[1]
    assert f"Memory {memory['id']}, for every hat, written by the planner agent in run" in listed
    topics = [e for e in stored_events(root) if isinstance(e, TopicPublished)]
    by_mcp = [t for t in topics if t.topic == "build.mcp"]
    assert len(by_mcp) == 3
    for mcp in by_mcp:
        # The same turn's `ralph emit`, the next build.shell after it.
        shell = next(
            t for t in topics if t.topic == "build.shell" and t.line_number > mcp.line_number
        )
        assert mcp.emitted_at is not None
        same = {"topic": "build.shell", "line_number": shell.line_number}
        same |= {"emitted_at": shell.emitted_at, "at": shell.at}
        assert attrs.evolve(mcp, **same) == shell


def test_a_card_an_agent_replaced_is_refused_and_the_next_is_written_fresh(
    tmp_path: Path,
) -> None:
    """A card an agent replaced by a link (to a card of its own making) or by a hostile card
    is refused by `ralph mcp`, nothing is written, and the run's next card is a regular file
    written afresh: the link's target is never written through."""
    root = tmp_path / "ws"
    root.mkdir()
    outside = tmp_path / "outside.json"
    requests = _requests(("emit", {"topic": "build.mcp", "payload": "hi"}))
    body = f"""
if [ -L {CARD} ]; then touch ".ralph/linked-$n"; fi
if [ "$n" -eq 1 ]; then
  cp {CARD} "{outside}"
  ln -sf "{outside}" {CARD}
elif [ "$n" -eq 2 ]; then
  sed 's#"events_file": "[^"]*"#"events_file": "../escape.jsonl"#' "{outside}" > .ralph/h
  mv .ralph/h {CARD}
fi
""" + _SPEAK.format(requests=root.parent / "requests.jsonl")
    make_workspace(root, scripts={}, agents={"main": _agent(root, body, requests)})
    done = ralph("run", cwd=root)
    assert done.returncode == 0, done.stdout + done.stderr
    assert _calls(root) == 4
    assert not list((root / ".ralph").glob("linked-*"))  # each turn's card came fresh
    kept = outside.read_text()
    assert json.loads(kept)["prompt_kind"] == "planning"  # the run never wrote through it
    error, text = _text(_answers(root, 1)[1])
    assert error
    assert "symbolic link" in text
    error, text = _text(_answers(root, 2)[1])
    assert error
    assert "events_file" in text
    assert "climbs out" in text or "not directly in .ralph/" in text
    # The third turn is the commit message's, which reads no topic; the fourth publishes.
    assert _text(_answers(root, 4)[1]) == (False, "Published build.mcp.")
    topics = [e for e in stored_events(root) if isinstance(e, TopicPublished)]
    assert [t.topic for t in topics] == ["build.mcp"]
    assert not (tmp_path / "escape.jsonl").exists()
    (written,) = (root / ".ralph").glob("mcp-*.json")
    assert not written.is_symlink()
    assert os.stat(written).st_mode & 0o777 == 0o644


def test_in_the_sandbox_the_agent_reads_its_card_and_cannot_change_it(tmp_path: Path) -> None:
    """Inside bubblewrap the agent's `ralph mcp` reads its card and publishes, while every
    try of the agent's shell to overwrite, remove or replace the card is denied (the
    requests are in the script: the sandbox hides the test's folder)."""
    root = tmp_path / "ws"
    requests = _requests(("emit", {"topic": "build.mcp", "payload": "inside"}))
    script = tmp_path / "agent.sh"
    script.write_text(
        f"""#!/bin/sh
try() {{
  if ( "$@" ) >/dev/null 2>&1; then echo "ALLOWED $1 $2" >> probes.txt
  else echo "denied" >> probes.txt; fi
}}
try sh -c 'echo {{}} > {CARD}'
try rm -f {CARD}
try ln -sf /etc/passwd {CARD}
try mv {CARD} card-moved.json
"$RALPH_BIN" mcp --card {CARD} >> answers.jsonl <<'REQUESTS'
{requests}REQUESTS
"""
        + SHELL_REPORTS
    )
    script.chmod(0o755)
    budgets = "max_iterations = 1\nmax_review_passes = 0\nmax_retries_per_agent = 0"
    extra = '[sandbox]\nmode = "required"\n'
    agents = {"main": [str(script)]}
    make_workspace(root, scripts={}, agents=agents, budgets=budgets, extra=extra, sandbox="")
    done = ralph("run", cwd=root)
    assert done.returncode == 0, done.stdout + done.stderr
    verdicts = (root / "probes.txt").read_text().splitlines()
    assert verdicts
    assert set(verdicts) == {"denied"}
    answers = [json.loads(line) for line in (root / "answers.jsonl").read_text().splitlines()]
    published = [_text(a) for a in answers if a["id"] == 1]
    assert published
    assert set(published) <= {
        (False, "Published build.mcp."),
        (
            True,
            "this prompt asks only for a file; ralph takes only memory and task notes from it",
        ),
    }
    assert (False, "Published build.mcp.") in published
    topics = [e for e in stored_events(root) if isinstance(e, TopicPublished)]
    assert "build.mcp" in [t.topic for t in topics]
