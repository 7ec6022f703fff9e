"""Driving ``ralph mcp`` in tests: a card written by hand, the server as a real subprocess,
spoken to by the ``mcp`` SDK's client or by raw JSON-RPC lines."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import anyio
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

ROOT = Path(__file__).resolve().parents[2]
RALPH = [sys.executable, "-m", "pipeline.app.cli"]
ENV = {**os.environ, "PYTHONPATH": str(ROOT)}
RUN = "20261129-061500-a1b2c3"
EVENTS = f".ralph/events-{RUN}.jsonl"


def card_for(workspace: Path, **overrides: Any) -> Path:
    """Write a card for ``workspace`` as a run would (a builder hat, enforced), with
    ``overrides`` replacing its top-level keys (``publishing`` keys merge into its own)."""
    publishing = {
        "publishes": ["build.**", "task.**", "human.interact"],
        "enforced": True,
        "completion_promise": "LOOP_COMPLETE",
        "cancellation_promise": "LOOP_CANCEL",
        "required_missing": ["review.done"],
        "human_topic": "human.interact",
    }
    given = overrides.pop("publishing", {})
    card: dict[str, Any] = {
        "card": 1,
        "run": RUN,
        "role": "developer",
        "hat": "builder",
        "prompt_kind": "development",
        "events_file": EVENTS,
        "publishing": None if given is None else {**publishing, **given},
        "limits": {"lines": 1000, "bytes": 1 << 20, "line_bytes": 64 << 10},
        "standing": {
            "phase": "development",
            "step": "invoke",
            "iteration": 2,
            "max_iterations": 10,
            "review_pass": 1,
            "max_review_passes": 3,
            "cost_usd": 0.12,
            "max_cost_usd": 5.0,
            "unknown_cost": False,
        },
        "memories": [
            {"id": "m-1", "text": "use ```x```", "tags": [], "by": "reviewer", "run": "r0"}
        ],
        "memories_left_out": 0,
        "tasks": [
            {
                "id": "t-1",
                "title": "wire it",
                "status": "blocked",
                "reason": "no key",
                "by": "person",
                "run": None,
            }
        ],
        "tasks_left_out": 2,
        **overrides,
    }
    path = workspace / ".ralph" / f"mcp-{RUN}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(card))
    return path


def lines_of(workspace: Path) -> list[dict[str, Any]]:
    """The lines of the run's events file (none when it does not exist)."""
    path = workspace / EVENTS
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_bytes().splitlines() if line]


def raw(
    argv: Sequence[str],
    messages: Sequence[object],
    cwd: Path,
    preexec_fn: Callable[[], None] | None = None,
) -> list[dict[str, Any]]:
    """The answers of ``ralph mcp ARGV`` to ``messages`` (bytes are sent as they are, any
    other value as one JSON line); the server must end with status 0 and print no traceback."""
    data = b"".join(m if isinstance(m, bytes) else json.dumps(m).encode() + b"\n" for m in messages)
    done = subprocess.run(
        [*RALPH, "mcp", *argv],
        input=data,
        cwd=cwd,
        env=ENV,
        capture_output=True,
        timeout=120,
        check=False,
        preexec_fn=preexec_fn,
    )
    assert done.returncode == 0, done.stderr
    assert b"Traceback" not in done.stderr, done.stderr
    return [json.loads(line) for line in done.stdout.splitlines()]


def request(ident: int, method: str, **params: Any) -> dict[str, Any]:
    """A JSON-RPC request line."""
    return {"jsonrpc": "2.0", "id": ident, "method": method, "params": params}


HELLO = [
    request(0, "initialize", protocolVersion="2025-06-18", capabilities={}, clientInfo={}),
    {"jsonrpc": "2.0", "method": "notifications/initialized"},
]
"""The handshake every client starts with."""

Calls = Sequence[tuple[str, dict[str, Any]]]
Results = list[tuple[bool, str]]


def raw_calls(card: Path, calls: Calls, cwd: Path) -> Results:
    """``calls`` to one server as raw lines: each one's ``(isError, text)``."""
    lines = [request(i, "tools/call", name=n, arguments=a) for i, (n, a) in enumerate(calls, 1)]
    answers = raw(["--card", str(card)], [*HELLO, *lines], cwd)
    assert [a["id"] for a in answers] == list(range(len(calls) + 1))
    results = [(a["result"]["isError"], a["result"]["content"][0]["text"]) for a in answers[1:]]
    # Every answer has the exact shape of a text result, refusals too.
    assert [a["result"] for a in answers[1:]] == [
        {"content": [{"type": "text", "text": text}], "isError": error} for error, text in results
    ]
    return results


def sdk_calls(card: Path, calls: Calls, cwd: Path) -> Results:
    """``calls`` to one server through the ``mcp`` SDK's client session."""

    async def session() -> Results:
        server = StdioServerParameters(
            command=RALPH[0], args=[*RALPH[1:], "mcp", "--card", str(card)], env=ENV, cwd=cwd
        )
        async with stdio_client(server) as (read, write), ClientSession(read, write) as client:
            await client.initialize()
            results: Results = []
            for name, arguments in calls:
                result = await client.call_tool(name, arguments)
                text = result.content[0].text  # type: ignore[union-attr]
                results.append((bool(result.is_error), text))  # type: ignore[union-attr]
            return results

    return anyio.run(session)
