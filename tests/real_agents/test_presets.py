"""Every shipped workflow preset with a real agent CLI: Claude Code (the pinned release) wears
each hat of the preset in turn, offline, against the scripted model server, through
``ralph run --preset NAME``. The model plays one way through each workflow to its completion
promise: each hat writes its file with Claude's own tools and hands on with the next topic from
its shell."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest

from tests.model_server import (
    ModelReply,
    ModelRequest,
    ModelServer,
    Shell,
    WriteFile,
    prompt_kind,
)
from tests.real_agents.repo import failing_repo, git, run_ralph, stored_events
from tests.real_agents.test_claude import claude_environment

pytestmark = pytest.mark.slow

Activation = tuple[str, str, str]
"""A hat, the file it writes, and the topic it publishes."""

PATHS: dict[str, Sequence[Activation]] = {
    "tdd": (
        ("test-writer", "test_more.py", "test.red"),
        ("implementer", "more.py", "test.green"),
        ("refactorer", "more.py", "LOOP_COMPLETE"),
    ),
    "debug": (
        ("reproducer", "repro.txt", "bug.reproduced"),
        ("investigator", "notes.txt", "hypothesis.confirmed"),
        ("bug-fixer", "fix.py", "fix.applied"),
        ("verifier", "verified.txt", "fix.verified"),
        ("reproducer", "repro.txt", "LOOP_COMPLETE"),
    ),
    "spec": (
        ("spec-writer", "SPEC.md", "spec.ready"),
        ("plan-writer", "PLAN.md", "plan.ready"),
        ("builder", "step.py", "build.ready"),
        ("critic", "REVIEW.md", "LOOP_COMPLETE"),
    ),
    "review-only": (
        ("correctness-reviewer", "REVIEW.md", "review.correctness"),
        ("test-reviewer", "REVIEW.md", "review.tests"),
        ("reporter", "REVIEW.md", "LOOP_COMPLETE"),
    ),
    "research": (
        ("researcher", "RESEARCH.md", "research.finding"),
        ("synthesizer", "RESEARCH.md", "LOOP_COMPLETE"),
    ),
}
"""One way through each topology preset to its completion, every required event on it."""

EMIT = '"$RALPH_BIN" emit'


def walking(path: Sequence[Activation]) -> Callable[[ModelRequest], ModelReply]:
    """A model that plays ``path``: each hat's next activation writes its file, then publishes
    its topic; a commit message when asked; a short answer to anything else."""
    queues: dict[str, list[Activation]] = {}
    for step in path:
        queues.setdefault(step[0], []).append(step)
    started: Counter[str] = Counter()

    def script(request: ModelRequest) -> ModelReply:
        kind = prompt_kind(request.prompt)
        if not request.tools or kind is None:
            return ModelReply(text="ralph scripted model")
        if kind == "commit_message":
            if request.turn == 0:
                return ModelReply(
                    actions=(WriteFile(path=".agent/out/commit-message", content="Work\n"),)
                )
            return ModelReply(text="Done.")
        hat = kind.removeprefix("hat:")
        if request.turn == 0:
            started[hat] += 1
        own = queues.get(hat, [])
        if not own or started[hat] > len(own):
            return ModelReply(text="Nothing to do.")
        _hat, path_name, topic = own[started[hat] - 1]
        if request.turn > 0:
            return ModelReply(text="Done.")
        # Both tools in one turn, as a model may call them: one model round trip fewer per hat.
        return ModelReply(
            actions=(
                WriteFile(path=path_name, content=f"{hat} was here ({started[hat]})\n"),
                Shell(f"{EMIT} {topic} 'from {hat}'"),
            )
        )

    return script


@pytest.mark.usefixtures("own_environment")
@pytest.mark.parametrize("preset", sorted(PATHS))
def test_claude_runs_each_shipped_preset_to_its_completion(
    preset: str, tmp_path: Path, agent_cli: Callable[[str], Path]
) -> None:
    """The hats wake in the path's order, each one a real Claude Code invocation on its hat's
    prompt; every topic came from Claude's Bash tool; the run completes; a committing preset
    commits its hats' files, a read-only one commits nothing."""
    program = agent_cli("claude")
    root = failing_repo(tmp_path / "repo", '[agents.main]\npreset = "claude"\n')
    # The repository's failing test is not these workflows' business: no final check.
    config = root / "ralph.toml"
    kept = [line for line in config.read_text().splitlines() if not line.startswith("validate")]
    config.write_text("\n".join(kept).replace("max_iterations = 2", "max_iterations = 8"))
    path = PATHS[preset]
    with ModelServer(walking(path)) as server:
        done = run_ralph(
            root,
            claude_environment(server.url, tmp_path / "home", program),
            "run",
            "--plain",
            "--preset",
            preset,
        )
    assert done.returncode == 0, done.stdout + done.stderr
    facts = stored_events(root)
    woken = [f["hat"] for f in facts if f["type"] == "development.hat_activated"]
    assert woken == [hat for hat, _file, _topic in path]
    published = [f["topic"] for f in facts if f["type"] == "agent.topic_published"]
    assert published == [topic for _hat, _file, topic in path]
    (ended,) = [f for f in facts if f["type"] == "lifecycle.run_completed"]
    assert ended["reason"] == "completed"
    history = git(root, "log", "--format=%s")
    if facts[0]["loop"]["topology"]["commits"]:
        assert "Work" in history
        assert path[0][1] in git(root, "log", "--name-only", "--format=")
    else:
        assert history.splitlines() == ["A failing test"]
