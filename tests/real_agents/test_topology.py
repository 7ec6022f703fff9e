"""A topology of the user's own with a real agent CLI: Claude Code (the pinned release) wears
two hats in turn, offline, against the scripted model server. The builder fixes the code and
hands on with ``review.ready`` from its own shell; the critic reads the prompt ralph wrote for
its hat and completes the run with ``LOOP_COMPLETE``."""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.model_server import (
    ModelReply,
    ModelServer,
    Playbook,
    Shell,
    WriteFile,
    by_kind,
    prompt_kind,
)
from tests.real_agents.repo import FIXED_APP, PYTHON, failing_repo, git, run_ralph, stored_events
from tests.real_agents.test_claude import claude_environment

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("own_environment")]

TOPOLOGY = """
[loop]
starting_event = "build.start"
required_events = ["review.ready"]

[hats.builder]
triggers = ["build.start"]
publishes = ["review.ready"]
instructions = "Fix app.py so that the test passes."

[hats.critic]
triggers = ["review.ready"]
publishes = ["LOOP_COMPLETE", "review.rejected"]
"""

EMIT = '"$RALPH_BIN" emit'


def _playbooks() -> dict[str, Playbook]:
    def steps(*actions: Shell | WriteFile) -> tuple[ModelReply, ...]:
        return tuple(ModelReply(actions=(action,)) for action in actions)

    return {
        "hat:builder": Playbook(
            steps=steps(
                WriteFile(path="app.py", content=FIXED_APP),
                Shell(f"{EMIT} review.ready 'app.py fixed'"),
            )
        ),
        "hat:critic": Playbook(steps=steps(Shell(f"{EMIT} LOOP_COMPLETE 'looks right'"))),
        "commit_message": Playbook(
            steps=steps(WriteFile(path=".agent/out/commit-message", content="Fix app.py\n"))
        ),
    }


def test_claude_wears_each_hat_of_a_topology_and_completes_it(
    tmp_path: Path, agent_cli: Callable[[str], Path]
) -> None:
    """builder then critic, each a real Claude Code invocation on its own hat's prompt; the
    topics came from Claude's Bash tool; the fix is committed and the test passes."""
    program = agent_cli("claude")
    root = failing_repo(tmp_path / "repo", '[agents.main]\npreset = "claude"\n')
    (root / "ralph.toml").write_text((root / "ralph.toml").read_text() + TOPOLOGY)
    with ModelServer(by_kind(_playbooks())) as server:
        done = run_ralph(
            root, claude_environment(server.url, tmp_path / "home", program), "run", "--plain"
        )
        exchanges = server.exchanges
    assert done.returncode == 0, done.stdout + done.stderr
    facts = stored_events(root)
    woken = [(f["hat"], f["topic"]) for f in facts if f["type"] == "development.hat_activated"]
    assert woken == [("builder", "build.start"), ("critic", "review.ready")]
    published = [f["topic"] for f in facts if f["type"] == "agent.topic_published"]
    assert published == ["review.ready", "LOOP_COMPLETE"]
    kinds = {prompt_kind(e.request.prompt) for e in exchanges if e.request is not None}
    assert {"hat:builder", "hat:critic"} <= kinds
    assert (root / "app.py").read_text() == FIXED_APP
    assert "return 42" in git(root, "log", "-p", "--format=%s")
    tested = subprocess.run([PYTHON, "-m", "unittest", "-q"], cwd=root, check=False)
    assert tested.returncode == 0
