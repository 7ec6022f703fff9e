"""Agents get ralph's environment less ralph's own store URL and credentials: a worker on a
real PostgreSQL server runs a shell agent that writes down everything it was given."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from pipeline.workers import submit
from tests.runtime.workspace import RALPH, ROOT, make_workspace

REPORTS = """
mkdir -p .agent/out
printf '1. do it' > .agent/out/plan.md
printf 'completed\\ndone' > .agent/out/status
: > .agent/out/issues.md
printf 'Do it' > .agent/out/commit-message
"""

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
    agent = root / "agent.sh"
    agent.write_text(
        '#!/bin/sh\nenv > "$RALPH_WORKSPACE_ROOT/.ralph/agent-env-$RALPH_ROLE"\n' + REPORTS
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
