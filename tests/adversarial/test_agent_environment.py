"""Agents get ralph's environment less ralph's own store URL and credentials: a worker on a
real PostgreSQL server runs a shell agent that writes down everything it was given."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

from pipeline.app.workers import Worker, submit
from pipeline.handlers.store.postgres import PostgresEventStore
from pipeline.handlers.store.queue import RunQueue
from tests.runtime.workspace import RALPH, ROOT, SHELL_REPORTS, make_workspace

PASSWORD = "team-db-password-0123"


def test_a_worker_hands_no_agent_its_store_url_or_database_password(
    tmp_path: Path, postgres_url: str
) -> None:
    """``ralph worker`` with the store in ``RALPH_STORE`` (a URL with a password, as a team
    sets it) and ``PGPASSWORD`` set: the agents' environment holds neither, nor the password
    anywhere, nor any other ``PG*`` variable, while the rest of the environment and the run's
    ``RALPH_*`` variables are there."""
    # The test server trusts every connection: a password in the URL is accepted and unused.
    url = postgres_url.replace("@", f":{PASSWORD}@", 1)  # postgresql://USER@HOST:PORT/DB
    root = tmp_path / "ws"
    root.mkdir()
    agent = root.parent / "agent.sh"  # outside the repository: not a change to commit
    agent.write_text(
        '#!/bin/sh\nenv > "$RALPH_WORKSPACE_ROOT/.ralph/agent-env-$RALPH_ROLE"\n' + SHELL_REPORTS
    )
    agent.chmod(0o755)
    make_workspace(
        root,
        scripts={},
        agents={"main": [str(agent)]},
        budgets="max_iterations = 1\nmax_review_passes = 1",
    )
    submit(url, root)
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "RALPH_STORE": url,
        "PGPASSWORD": PASSWORD,
        "PGCONNECT_TIMEOUT": "7",
        "TEAM_SETTING": "kept",
    }
    done = subprocess.run(
        [*RALPH, "worker", "--exit-when-idle"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert done.returncode == 0, done.stderr
    seen = sorted((root / ".ralph").glob("agent-env-*"))
    assert seen, done.stderr
    for path in seen:
        text = path.read_text()
        names = {line.split("=", 1)[0] for line in text.splitlines() if "=" in line}
        assert PASSWORD not in text, path.name
        assert "RALPH_STORE" not in names
        assert not {name for name in names if name.startswith("PG")}
        assert {"TEAM_SETTING", "RALPH_RUN_ID", "RALPH_EVENTS_FILE", "PATH"} <= names


def test_a_tickets_outcome_is_stored_with_its_secrets_masked(
    tmp_path: Path, postgres_url: str
) -> None:
    """An outcome quotes the error that ended the ticket (here, its workspace's path, which
    holds a token): the queue the team reads stores it masked, and the worker says it masked."""
    token = "ghp_" + "a1b2c3d4e5" * 4
    root = make_workspace(
        tmp_path / token, scripts={}, agents={"main": ["true"]}, budgets="max_iterations = 1"
    )
    ticket = submit(postgres_url, root)
    shutil.rmtree(root)
    lines: list[str] = []
    Worker(postgres_url, poll_s=0.05, on_message=lines.append).run(exit_when_idle=True)
    with PostgresEventStore(postgres_url) as store:
        failed = RunQueue(store).get(ticket.ticket)
    assert failed is not None
    assert failed.outcome is not None
    assert token not in failed.outcome
    assert "[redacted:github-token] is not a directory" in failed.outcome
    assert not [line for line in lines if token in line]


def test_no_agent_reads_the_store_password_in_ralph_toml(tmp_path: Path, postgres_url: str) -> None:
    """A ``[store] url`` holding a password is refused before anything runs, the password
    in no output (before, the run started, and a shell agent that reads ``ralph.toml``, as
    every agent may, copied the team's database password into its work and ralph's commit);
    the same URL without its password runs."""
    url = postgres_url.replace("@", f":{PASSWORD}@", 1)
    root = tmp_path / "ws"
    root.mkdir()
    agent = tmp_path / "agent.sh"
    agent.write_text("#!/bin/sh\ncat ralph.toml >> notes.txt\n" + SHELL_REPORTS)
    agent.chmod(0o755)
    make_workspace(
        root,
        scripts={},
        agents={"main": [str(agent)]},
        budgets="max_iterations = 1\nmax_review_passes = 0",
        extra=f'[store]\nurl = "{url}"\n',
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT), "PGCONNECT_TIMEOUT": "7"}
    done = subprocess.run(
        [*RALPH, "run", "--plain"], cwd=root, env=env, capture_output=True, text=True, timeout=180
    )
    assert done.returncode == 2, done.stdout[-2000:] + done.stderr[-2000:]
    assert "store.url: holds a password" in done.stderr
    assert PASSWORD not in done.stdout + done.stderr
    assert not (root / "notes.txt").exists()
    config = root / "ralph.toml"
    config.write_text(config.read_text().replace(url, postgres_url))
    subprocess.run(["git", "commit", "--quiet", "-am", "no password"], cwd=root, check=True)
    done = subprocess.run(
        [*RALPH, "run", "--plain"], cwd=root, env=env, capture_output=True, text=True, timeout=180
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert PASSWORD not in (root / "notes.txt").read_text()
