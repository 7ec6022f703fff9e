"""A sandboxed agent that tries to put a link to a folder of the person's where ``.agent``
is: ralph empties ``.agent/out``, writes ``.agent/prompts`` and ``.agent/tmp`` and reads the
reports there at each step, so that folder must stay ralph's."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from pipeline.core.sandbox import mount_plan
from tests.runtime.workspace import ralph, sandboxed_shell_workspace
from tests.sandbox.inputs import W, workspace_inputs

HAS_BWRAP = subprocess.run(["sh", "-c", "command -v bwrap"], capture_output=True).returncode == 0
needs_bwrap = pytest.mark.skipif(
    not HAS_BWRAP and not os.environ.get("CI"), reason="bubblewrap is not installed"
)


@needs_bwrap
def test_an_agent_cannot_replace_its_folder_by_a_link_to_the_persons(tmp_path: Path) -> None:
    """``.agent`` is a mount point in the sandbox: the agent's ``mv .agent`` fails (before,
    it succeeded, and ralph's next step emptied ``out`` of the person's folder the link named
    and wrote prompts there), the person's folder keeps what it held, and the run ends."""
    victim = tmp_path / "victim"
    (victim / "out").mkdir(parents=True)
    (victim / "out" / "precious.txt").write_text("the person's\n")
    root = tmp_path / "ws"
    script = tmp_path / "agent.sh"
    plant = (
        "if [ ! -e .agent-tried ]; then : > .agent-tried; "
        f"mv .agent .agent-moved 2> .agent-said && ln -s {victim} .agent; fi\n"
    )
    sandboxed_shell_workspace(root, script, plant, max_iterations=1)
    done = ralph("run", "--plain", cwd=root)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert (root / ".agent-tried").exists(), "the agent ran"
    assert "busy" in (root / ".agent-said").read_text()
    assert not (root / ".agent").is_symlink()
    assert not (root / ".agent-moved").exists()
    assert sorted(p.name for p in victim.rglob("*")) == ["out", "precious.txt"]


def test_the_agents_folder_is_bound_onto_itself_before_its_read_only_tmp() -> None:
    """The plan binds ``.agent`` writable onto itself, and ``.agent/tmp`` read-only after it
    (a later bind covers an earlier one): both are mount points, neither can be moved."""
    argv = list(mount_plan(workspace_inputs()))
    agent = argv.index(f"{W}/.agent")
    assert argv[agent - 1 : agent + 2] == ["--bind", f"{W}/.agent", f"{W}/.agent"]
    marker = argv.index(f"{W}/.agent/tmp")
    assert argv[marker - 1] == "--ro-bind"
    assert marker > agent
