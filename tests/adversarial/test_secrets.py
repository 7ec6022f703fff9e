"""No secret from ralph's environment reaches anything ralph stores or prints: a hostile (or
just failing) shell agent prints the keys it was given, publishes them as topics and exits
non-zero, and no byte of the store, its checkpoints, the outputs, the reports or the spans
holds them."""

from __future__ import annotations

import os
import secrets
import subprocess
from pathlib import Path

import pytest

from pipeline.events import InvocationFailed, TopicPublished
from pipeline.handlers.runtime import WorkspaceLayout
from tests.runtime.workspace import RALPH, ROOT, make_workspace, stored_events

pytestmark = pytest.mark.slow  # whole runs in subprocesses: seconds a test

ANTHROPIC_KEY = "sk-ant-api03-" + secrets.token_urlsafe(32)
"""A key in a variable named like one, and shaped like one."""
SERVICE_TOKEN = "zq7." + secrets.token_hex(12)
"""A token of no known shape: only its variable's name (``*_TOKEN``) marks it."""
CUSTOM = "cst." + secrets.token_hex(12)
"""A secret in a variable only ``[redaction] variables`` names."""
GITHUB = "ghp_" + secrets.token_hex(18)
"""A token the agent has from elsewhere (written in its script): only its shape marks it."""
DB_PASSWORD = "pw" + secrets.token_hex(8)
"""The password of a URL in the environment."""
SECRETS = {
    "ANTHROPIC_API_KEY": ANTHROPIC_KEY,
    "SERVICE_TOKEN": SERVICE_TOKEN,
    "ACME_CREDS": CUSTOM,
    "github": GITHUB,
    "url password": DB_PASSWORD,
}

AGENT = f"""#!/bin/sh
all="$ANTHROPIC_API_KEY $SERVICE_TOKEN $ACME_CREDS {GITHUB} $DATABASE_URL"
"$RALPH_BIN" emit progress "working with $all"
"$RALPH_BIN" emit progress --json "{{\\"$ANTHROPIC_API_KEY\\": \\"$all\\"}}"
"$RALPH_BIN" emit "$SERVICE_TOKEN"
echo "request failed: $all"
echo "401 invalid key $all" >&2
exit 1
"""


def _ralph(*args: str, cwd: Path) -> subprocess.CompletedProcess[bytes]:
    env = {
        **os.environ,
        "COLUMNS": "160",
        "PYTHONPATH": str(ROOT),
        "ANTHROPIC_API_KEY": ANTHROPIC_KEY,
        "SERVICE_TOKEN": SERVICE_TOKEN,
        "ACME_CREDS": CUSTOM,
        "DATABASE_URL": f"postgresql://app:{DB_PASSWORD}@db.invalid/app",
    }
    return subprocess.run([*RALPH, *args], cwd=cwd, env=env, capture_output=True, timeout=120)


def _leaks(data: bytes) -> list[str]:
    return [name for name, value in SECRETS.items() if value.encode() in data]


def test_no_secret_of_the_environment_reaches_the_store_outputs_reports_or_spans(
    tmp_path: Path,
) -> None:
    """The agent's secrets are in its own output (so the test can fail), and in no byte of
    the SQLite file and its WAL (events and checkpoints), ``run --json-logs``, ``status``,
    ``events``, ``topics``, the HTML and Markdown reports, the OTel spans file or the prompts
    ralph wrote for the next agents; the facts hold ``[redacted:NAME]`` where the secrets
    were. (The agent's own output log is its own: see docs/architecture/runtime.md.)"""
    root = tmp_path / "ws"
    root.mkdir()
    agent = root.parent / "agent.sh"  # outside the repository: not a change to commit
    agent.write_text(AGENT)
    agent.chmod(0o755)
    make_workspace(
        root,
        scripts={},
        agents={"main": [str(agent)]},
        budgets="max_retries_per_agent = 1\nbackoff_base_ms = 10\nbackoff_cap_ms = 20",
        extra='[redaction]\nvariables = ["acme_*"]\n',
    )
    spans = tmp_path / "spans.jsonl"
    run = _ralph("run", "--json-logs", "--otel-file", str(spans), cwd=root)
    assert run.returncode != 0
    logs = list((root / ".ralph" / "runs").rglob("*.log"))
    assert logs
    assert all(_leaks(log.read_bytes()) == list(SECRETS) for log in logs)

    outputs = {
        "run": run.stdout + run.stderr,
        "status": _ralph("status", cwd=root).stdout,
        "events": _ralph("events", cwd=root).stdout,
        "events --format jsonl": _ralph("events", "--format", "jsonl", cwd=root).stdout,
        "topics": _ralph("topics", cwd=root).stdout,
        "report": _ralph("report", "--html", "r.html", "--markdown", "r.md", cwd=root).stdout,
        "report.html": (root / "r.html").read_bytes(),
        "report.md": (root / "r.md").read_bytes(),
        "spans": spans.read_bytes(),
    }
    for prompt in (root / ".agent" / "prompts").iterdir():
        outputs[prompt.name] = prompt.read_bytes()
    store = WorkspaceLayout(root=root).store  # the default store, in the git directory
    for suffix in ("", "-wal", "-shm"):
        path = store.with_name(store.name + suffix)
        outputs["pipeline.db" + suffix] = path.read_bytes() if path.exists() else b""
    assert len(outputs["pipeline.db"]) > 0
    assert len(outputs["spans"]) > 0
    assert {name: _leaks(data) for name, data in outputs.items()} == {name: [] for name in outputs}

    facts = stored_events(root)
    failed = [f.message for f in facts if isinstance(f, InvocationFailed)]
    assert failed
    assert all("[redacted:ANTHROPIC_API_KEY]" in m for m in failed), failed
    topics = [f for f in facts if isinstance(f, TopicPublished)]
    assert "[redacted:SERVICE_TOKEN]" in topics[0].payload.text
    assert "[redacted:ACME_CREDS]" in topics[0].payload.text
    assert "[redacted:github-token]" in topics[0].payload.text
    assert "app:[redacted:password]@db.invalid" in topics[0].payload.text
    assert '"[redacted:ANTHROPIC_API_KEY]":' in topics[1].payload.text
    assert topics[2].topic == "[redacted:SERVICE_TOKEN]"


def test_a_store_url_that_cannot_be_used_is_never_echoed_with_its_password(
    tmp_path: Path,
) -> None:
    """An unparsable PostgreSQL URL, a URL of an unknown scheme and an unreachable server:
    each is a message that names the store without its password."""
    password = "hunter2-" + secrets.token_hex(4)
    for url in (
        f"postgresql://bob:{password}@[::1/db",
        f"postgresql://bob:{password}@host/db?sslmode=not a mode",
        f"postgresql://bob:{password} with/spaces@[::1/db",
        f"mysql://bob:{password}@db.invalid/db",
        f"postgresql://bob:{password}@127.0.0.1:1/db?connect_timeout=1",
    ):
        for command in (["status", "--store", url], ["doctor", "--store", url]):
            done = _ralph(*command, cwd=tmp_path)
            said = (done.stdout + done.stderr).decode()
            assert done.returncode != 0, (command, said)
            assert password not in said, (command, said)
            assert "[redacted:password]" in said or "postgresql://bob@" in said, (command, said)
