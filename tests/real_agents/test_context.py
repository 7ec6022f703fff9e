"""Claude Code (the pinned release) keeps a memory and tracks a task with its own Bash tool, in
ralph's sandbox, offline against the scripted model server: the planner adds a task and a
memory for the developer, the developer's prompt carries both, it marks the task done, and
``[context] finish_tasks`` lets the run complete once it has."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.model_server import (
    ModelReply,
    ModelRequest,
    ModelServer,
    Shell,
    WriteFile,
    by_kind,
    fixing_pipeline,
    prompt_kind,
)
from tests.real_agents.repo import FIXED_APP, assert_sandboxed, failing_repo, run_ralph
from tests.real_agents.test_claude import claude_environment

pytestmark = pytest.mark.slow

PLANNER = (
    WriteFile(path=".agent/out/plan.md", content="1. Fix app.py\n"),
    Shell("\"$RALPH_BIN\" task add 'Fix app.py'"),
    Shell("\"$RALPH_BIN\" memory add 'The answer is 42' --tag developer"),
)

OPEN_TASK = (
    r"Task (t-[0-9a-f]{8}), open, added by the planner agent in run [^:\n]+:\n\n"
    r"`{3,}text\nFix app.py\n"
)
"""The planner's open task as the prompt labels it (its author by ralph, its title fenced)."""


def _script() -> Callable[[ModelRequest], ModelReply]:
    others = by_kind(fixing_pipeline("app.py", FIXED_APP))

    def script(request: ModelRequest) -> ModelReply:
        kind = prompt_kind(request.prompt)
        if kind == "planning" and request.tools:
            steps = PLANNER
        elif kind == "development" and request.tools:
            task = re.search(OPEN_TASK, request.prompt)
            done = f'"$RALPH_BIN" task done {task.group(1) if task else "missing"}'
            steps = (
                WriteFile(path="app.py", content=FIXED_APP),
                Shell(done),
                WriteFile(path=".agent/out/status", content="completed\nFixed app.py.\n"),
            )
        else:
            return others(request)
        if request.turn >= len(steps):
            return ModelReply(text="Done.")
        return ModelReply(actions=(steps[request.turn],))

    return script


@pytest.mark.usefixtures("own_environment")
def test_claude_keeps_a_memory_and_finishes_a_task_from_its_own_shell(
    tmp_path: Path, agent_cli: Callable[[str], Path]
) -> None:
    """The planner adds a task and a memory with Claude Code's Bash tool; the developer's
    prompt carries both, it marks the task done from its own shell, and ralph lists the task
    done and the memory kept."""
    program = agent_cli("claude")
    config = '[agents.main]\npreset = "claude"\n\n[context]\nfinish_tasks = true\n'
    root = failing_repo(tmp_path / "repo", config)
    # No review pass: the memory and the task are the planner's and the developer's work.
    toml = root / "ralph.toml"
    toml.write_text(toml.read_text().replace("max_review_passes = 1", "max_review_passes = 0"))
    with ModelServer(_script()) as server:
        environment = claude_environment(server.url, tmp_path / "home", program)
        done = run_ralph(root, environment, "run", "--plain")
        requests = server.model_requests()
        tasks = run_ralph(root, environment, "task", "list", "--all", "--json")
        memories = run_ralph(root, environment, "memory", "list", "--json")
    assert done.returncode == 0, done.stdout + done.stderr
    assert_sandboxed(root, server.url)
    developer = [r.prompt for r in requests if prompt_kind(r.prompt) == "development"]
    assert developer, "the developer never asked its model"
    assert "The answer is 42" in developer[0]
    assert re.search(OPEN_TASK, developer[0])
    listed = [json.loads(line) for line in tasks.stdout.splitlines()]
    assert [(t["title"], t["status"], t["by"]) for t in listed] == [
        ("Fix app.py", "done", "planner")
    ]
    kept = [json.loads(line) for line in memories.stdout.splitlines()]
    assert [(m["text"], m["tags"]) for m in kept] == [("The answer is 42", ["developer"])]
