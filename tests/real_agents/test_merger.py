"""Claude Code (the pinned release) as the ``merger`` hat: a replay's conflict goes to it,
offline, against the scripted model server; it resolves the file with its own Bash tool and
reports, ralph checks the file and lands the branch."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from pipeline.events import IntegrationResolved, TargetAdvanced
from tests.model_server import ModelReply, ModelRequest, ModelServer, Shell
from tests.real_agents.test_claude import claude_environment
from tests.runtime.test_merge_queue import SAME_LINES
from tests.runtime.workspace import completed_runs, git, log_of, make_workspace, ralph

pytestmark = pytest.mark.slow

RESOLVE = (
    Shell("printf 'both\\n' > shared.txt"),
    Shell("mkdir -p .agent/out && printf 'completed\\nresolved' > .agent/out/status"),
)
"""What the scripted model has Claude Code do, one tool call a turn."""


@pytest.mark.usefixtures("own_environment")
def test_claude_as_the_merger_hat_resolves_a_replays_conflict(
    tmp_path: Path, agent_cli: Callable[[str], Path]
) -> None:
    program = agent_cli("claude")
    root = make_workspace(
        tmp_path / "repo",
        scripts={},
        agents={"main": ["sh", "-c", SAME_LINES]},
        extra='[merge]\nresolvers = ["merger"]\n\n[agents.merger]\npreset = "claude"\n',
    )
    first, second = completed_runs(root, 2)

    def script(request: ModelRequest) -> ModelReply:
        if request.turn >= len(RESOLVE):
            return ModelReply(text="Resolved.")
        return ModelReply(actions=(RESOLVE[request.turn],))

    with ModelServer(script) as server:
        environment = claude_environment(server.url, tmp_path / "home", program)
        merged = ralph(
            "worktrees", "merge", str(first["name"]), str(second["name"]),
            cwd=root, env=environment, timeout=300,
        )  # fmt: skip
        requests = server.model_requests()
    assert merged.returncode == 0, merged.stdout + merged.stderr
    assert "merger resolved the conflicts in shared.txt" in merged.stderr
    assert (root / "shared.txt").read_text() == "both\n"
    assert git(root, "status", "--porcelain") == ""
    # Claude Code was told which files conflict, and which branches.
    assert requests, "the merger never asked its model"
    told = requests[0].prompt
    assert "Resolve merge conflicts" in told
    assert "`shared.txt`" in told
    assert str(second["branch"]) in told
    facts = log_of(second)
    resolved = [f for f in facts if isinstance(f, IntegrationResolved)]
    assert [(r.agent, r.paths) for r in resolved] == [("merger", ("shared.txt",))]
    assert isinstance(facts[-1], TargetAdvanced)
