"""The trust model's law for git, with real bubblewrap and real git: whatever an agent writes
under its work tree and ``.git/`` (in a main tree or a linked worktree), the refs, config,
hooks and folders ralph's git uses afterwards are those it used before, but for ralph's own
commit."""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pipeline.core.sandbox import SandboxPolicy
from pipeline.handlers.agents import ProcessSpec, run_process
from pipeline.handlers.runtime import GitPolicy, run_git
from pipeline.handlers.sandbox import AgentNeeds, Sandbox, probe
from tests.handlers.sandbox_support import workspace_paths

pytestmark = pytest.mark.skipif(
    shutil.which("bwrap") is None and not os.environ.get("CI"),
    reason="bubblewrap is not installed",
)

_TARGETS = (
    "{git}/config",
    "{git}/commondir",
    "{git}/HEAD",
    "{git}/refs/heads/main",
    "{git}/refs/heads/planted",
    "{git}/packed-refs",
    "{git}/hooks/pre-commit",
    "{git}/info/attributes",
    "{git}/objects/info/alternates",
    "{git}/config.worktree",
    "{own}/commondir",
    "{own}/gitdir",
    "{own}/HEAD",
    "{own}/index",
    "{tree}/.git",
    "{tree}/.gitattributes",
    "{tree}/src/app.py",
)
"""Where an agent writes: git's common folder, its own worktree's git folder, the work tree."""

_WRITES = (
    "printf '../../evil\\n' > {path}",
    "printf '[core]\\n\\tfsmonitor = touch {marker}\\n' >> {path}",
    "printf '[filter \"x\"]\\n\\tclean = touch {marker}\\n' >> {path}",
    "rm -rf {path}",
    "ln -sfn {tree}/evil {path}",
    "mkdir -p {path}",
    "printf 'gitdir: {tree}/evil\\n' > {path}",
)


def _git(root: Path, *args: str) -> str:
    return run_git(root, *args, policy=GitPolicy()).stdout


def _seen_by_ralphs_git(root: Path) -> dict[str, str]:
    """What ralph's git reads in ``root``: its folders, refs, config and hooks."""
    common = Path(_git(root, "rev-parse", "--path-format=absolute", "--git-common-dir").strip())
    hooks = sorted(
        f"{p.name}:{p.read_bytes()!r}" for p in (common / "hooks").iterdir() if p.is_file()
    )
    return {
        "dirs": _git(root, "rev-parse", "--path-format=absolute", "--git-dir", "--git-common-dir"),
        "refs": _git(root, "for-each-ref", "--format=%(refname) %(objectname)"),
        "config": _git(root, "config", "--list", "--local", "--show-origin"),
        "attributes": _git(root, "check-attr", "-a", "src/app.py"),
        "hooks": "\n".join(hooks),
    }


def _repository(tmp: Path, linked: bool) -> tuple[Path, Path, Path]:
    """A repository with one commit and a linked worktree; the work tree the agent works in,
    its git folder and the common one."""
    main = tmp / "ws"
    main.mkdir()
    for args in (
        ("init", "--quiet", "--initial-branch", "main"),
        ("config", "user.name", "t"),
        ("config", "user.email", "t@example.invalid"),
    ):
        subprocess.run(["git", *args], cwd=main, check=True)
    (main / "src").mkdir()
    (main / "src" / "app.py").write_text("x = 1\n")
    subprocess.run(["git", "add", "-A"], cwd=main, check=True)
    subprocess.run(["git", "commit", "--quiet", "-m", "start"], cwd=main, check=True)
    other = tmp / "ws-worktrees" / "other"
    subprocess.run(
        ["git", "worktree", "add", "--quiet", "-b", "other", str(other)], cwd=main, check=True
    )
    common = main / ".git"
    if not linked:
        return main, common, common
    tree = tmp / "ws-worktrees" / "run"
    add = ["git", "worktree", "add", "--quiet", "-b", "run", str(tree)]
    subprocess.run(add, cwd=main, check=True)
    return tree, common / "worktrees" / "run", common


@settings(
    max_examples=12,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    linked=st.booleans(),
    writes=st.lists(
        st.tuples(st.sampled_from(_TARGETS), st.sampled_from(_WRITES)), min_size=1, max_size=6
    ),
)
def test_agent_writes_never_change_what_ralphs_git_reads(
    linked: bool, writes: list[tuple[str, str]]
) -> None:
    """Arbitrary writes by a sandboxed process under the work tree and ``.git/``: afterwards
    ralph's git sees the same folders, refs, config, attributes and hooks, and after its own
    commit only the run's branch has moved, by that one commit; no planted program ran."""
    with tempfile.TemporaryDirectory(dir="/var/tmp") as name:
        tmp = Path(name)
        tree, own, common = _repository(tmp, linked)
        marker = tmp / "ran"
        (tmp / "home").mkdir()
        before = _seen_by_ralphs_git(tree)
        head = _git(tree, "rev-parse", "HEAD").strip()
        lines = [
            write.format(
                path=shlex.quote(target.format(git=common, own=own, tree=tree)),
                marker=marker,
                tree=tree,
            )
            + " 2>/dev/null || true"
            for target, write in writes
        ]
        paths = workspace_paths(tree, own, common)
        sandbox = Sandbox(policy=SandboxPolicy(), probe=probe(dict(os.environ), 1000), paths=paths)
        spec = ProcessSpec(
            argv=("sh", "-c", "\n".join(lines)),
            cwd=tree,
            env={**os.environ, "HOME": str(tmp / "home")},
            output_path=tmp / "out.log",
            total_timeout_s=30.0,
        )
        with sandbox.wrapped(spec, AgentNeeds()) as wrapped:
            done = run_process(wrapped.spec)
        assert done.exit_code == 0, (tmp / "out.log").read_text()
        assert _seen_by_ralphs_git(tree) == before
        _git(tree, "add", "--all", "--", "src")
        _git(tree, "commit", "--quiet", "--allow-empty", "-m", "ralph's commit")
        after = _seen_by_ralphs_git(tree)
        branch = "refs/heads/run" if linked else "refs/heads/main"
        moved = set(after["refs"].splitlines()) ^ set(before["refs"].splitlines())
        assert {line.split()[0] for line in moved} == {branch}
        assert _git(tree, "rev-parse", "HEAD~1").strip() == head
        assert {k: v for k, v in after.items() if k != "refs"} == {
            k: v for k, v in before.items() if k != "refs"
        }
        assert not marker.exists()
