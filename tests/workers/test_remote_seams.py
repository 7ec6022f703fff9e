"""Hostile agents at the seams of remote tickets (issue 49): what a worker keeps for a
takeover elsewhere goes to the store the whole team reads, and what a ticket's repository
holds is the agent's to write. Real PostgreSQL, bare remotes in the test's folder, real
``ralph worker --workdir`` processes with shell agents that misbehave on purpose."""

from __future__ import annotations

import os
import secrets
import time
from pathlib import Path

import psycopg
import pytest

from pipeline.app.workers import submit
from pipeline.handlers.store.postgres import PostgresEventStore
from pipeline.handlers.store.queue import RunQueue, TicketState
from tests.workers.remotes import bare_remote
from tests.workers.support import start_worker

pytestmark = pytest.mark.slow  # whole runs in subprocesses: seconds a test

SERVICE_TOKEN = "zq7." + secrets.token_hex(12)
"""A token of no known shape, in a variable named like one: only the environment marks it."""
GITHUB = "ghp_" + secrets.token_hex(18)
"""A token the agent has from elsewhere (written in its script): only its shape marks it."""


def _drained(url: str, ticket: str, workdir: Path, env: dict[str, str]) -> str:
    """Run one worker with ``env`` until ``ticket`` is done; its lines."""
    worker = start_worker(url, "--workdir", str(workdir), "--poll-seconds", "0.05",
                          cwd=workdir.parent, env=env)  # fmt: skip
    try:
        deadline = time.monotonic() + 120
        while True:
            with PostgresEventStore(url) as store:
                found = RunQueue(store).get(ticket)
            assert found is not None
            if found.state is TicketState.DONE:
                break
            assert found.state is not TicketState.FAILED, found
            assert time.monotonic() < deadline, found
            time.sleep(0.1)
    finally:
        worker.terminate()
        _out, err = worker.communicate(timeout=60)
    return err


def test_the_plan_issues_and_prompts_a_worker_keeps_hold_no_secret(
    postgres_url: str, tmp_path: Path
) -> None:
    """An agent writes the environment's token and a token-shaped secret into its plan and its
    review's issues: the files the worker keeps for a takeover (``ticket_files``, read by the
    whole team) hold neither, the masks in their place, while the agent's own files held both
    (so the test can fail)."""
    agent = f"""
mkdir -p .agent/out
printf '1. use %s and {GITHUB}\\n' "$SERVICE_TOKEN" > .agent/out/plan.md
printf -- '- leaked %s and {GITHUB}\\n' "$SERVICE_TOKEN" > .agent/out/issues.md
cp .agent/out/plan.md seen-plan.txt
printf 'completed\\ndone' > .agent/out/status
printf 'Do it' > .agent/out/commit-message
echo "$$" >> work.txt
"""
    remote = bare_remote(tmp_path / "host", agent=["sh", "-c", agent])
    ticket = submit(postgres_url, remote.clone, remote="origin").ticket
    workdir = tmp_path / "w"
    env = {**os.environ, "SERVICE_TOKEN": SERVICE_TOKEN}
    _drained(postgres_url, ticket, workdir, env)
    seen = (workdir / ticket / "seen-plan.txt").read_text()
    assert SERVICE_TOKEN in seen, seen  # the agent had both
    assert GITHUB in seen, seen
    with psycopg.connect(postgres_url) as conn:
        rows = conn.execute(
            "SELECT path, body FROM ticket_files WHERE ticket = %s AND carried", (ticket,)
        ).fetchall()
    kept = {path: bytes(body) for path, body in rows}
    assert {".agent/PLAN.md", ".agent/ISSUES.md"} <= set(kept), sorted(kept)
    leaks = {
        path: [s for s in (SERVICE_TOKEN, GITHUB) if s.encode() in body]
        for path, body in kept.items()
    }
    assert leaks == {path: [] for path in kept}
    assert b"[redacted:SERVICE_TOKEN]" in kept[".agent/PLAN.md"], kept[".agent/PLAN.md"]
    assert b"[redacted:github-token]" in kept[".agent/ISSUES.md"], kept[".agent/ISSUES.md"]
