"""The prompt file's permissions: given back after a run that never finished, and never
changed through a symbolic link or outside the workspace (real `ralph` processes, real files).
"""

from __future__ import annotations

import os
from pathlib import Path

from pipeline.events import (
    PromptPermissionsRestored,
    RunAbandoned,
    RunCompleted,
    RunStarted,
    TerminationReason,
)
from pipeline.handlers.runtime import WorkspaceLayout
from tests.runtime.workspace import PYTHON, commit_all, make_workspace, ralph, stored_events

# Fails while .agent/fail exists; otherwise reports success for every role.
AGENT = [
    PYTHON,
    "-c",
    "import os, pathlib, sys; os.makedirs('.agent/out', exist_ok=True)\n"
    "if os.path.exists('.agent/fail'): sys.exit(1)\n"
    "if os.path.exists('.agent/swap'):\n"
    "    target = pathlib.Path('.agent/swap').read_text()\n"
    "    os.remove('PROMPT.md'); os.symlink(target, 'PROMPT.md')\n"
    "[pathlib.Path('.agent/out', n).write_text(t) for n, t in "
    "[('plan.md', 'p'), ('status', 'completed'), ('issues.md', ''), ('commit-message', 'm')]]\n"
    "open('work.txt', 'a').write('x')",  # a change to commit: a run that commits none fails
]


def _workspace(tmp_path: Path) -> Path:
    root = make_workspace(
        tmp_path / "ws",
        scripts={},
        agents={"main": AGENT},
        budgets="max_retries_per_agent = 0\nbackoff_base_ms = 10\nbackoff_cap_ms = 20",
    )
    (root / ".agent").mkdir(exist_ok=True)
    return root


def test_a_fresh_run_gives_back_the_mode_an_unfinished_run_took_away(tmp_path: Path) -> None:
    """Run 1 stops (every agent fails) and says PROMPT.md stays read-only and how it comes
    back; run 2, started afresh, warns and ends with PROMPT.md at its mode before run 1."""
    root = _workspace(tmp_path)
    prompt = root / "PROMPT.md"
    prompt.chmod(0o640)
    (root / ".agent" / "fail").write_text("")
    first = ralph("run", cwd=root)
    assert first.returncode != 0, first.stdout + first.stderr
    assert prompt.stat().st_mode & 0o222 == 0
    said = " ".join(first.stdout.split())  # as read, whatever the terminal's width
    assert "stays read-only until the run ends" in said
    assert "a new `ralph run` gives it back its mode 0o640" in said
    (root / ".agent" / "fail").unlink()
    second = ralph("run", cwd=root)
    assert second.returncode == 0, second.stdout + second.stderr
    assert "was left read-only by run" in second.stderr
    assert prompt.stat().st_mode & 0o777 == 0o640


def test_a_run_after_the_mode_came_back_names_no_unfinished_run(tmp_path: Path) -> None:
    """Once a later run gave PROMPT.md its mode back, the next run does not warn again about
    the run that never finished (it stays in the store), and keeps the mode it finds."""
    root = _workspace(tmp_path)
    prompt = root / "PROMPT.md"
    prompt.chmod(0o640)
    (root / ".agent" / "fail").write_text("")
    assert ralph("run", cwd=root).returncode != 0
    (root / ".agent" / "fail").unlink()
    second = ralph("run", cwd=root)
    assert second.returncode == 0, second.stdout + second.stderr
    assert "was left read-only by run" in second.stderr
    prompt.chmod(0o600)  # the person's choice since, which the next run keeps
    commit_all(root)  # the reviewer's own line in work.txt
    third = ralph("run", cwd=root)
    assert third.returncode == 0, third.stdout + third.stderr
    assert "was left read-only" not in third.stderr
    assert prompt.stat().st_mode & 0o777 == 0o600


def test_ralph_abandon_records_the_fact_and_gives_the_prompt_back(tmp_path: Path) -> None:
    """`ralph abandon RUN` on a stopped run: a RunAbandoned fact, the run finalized as
    abandoned, PROMPT.md at its mode before the run; abandoning again is refused."""
    root = _workspace(tmp_path)
    prompt = root / "PROMPT.md"
    prompt.chmod(0o640)
    (root / ".agent" / "fail").write_text("")
    first = ralph("run", cwd=root)
    assert first.returncode != 0, first.stdout + first.stderr
    assert "ralph abandon" in first.stdout
    (run,) = {e.run_id for e in stored_events(root) if isinstance(e, RunStarted)}
    abandoned = ralph("abandon", run, cwd=root)
    assert abandoned.returncode == 0, abandoned.stdout + abandoned.stderr
    assert f"Abandoned run {run}" in abandoned.stdout
    assert "has its mode 0o640 back" in abandoned.stdout
    assert prompt.stat().st_mode & 0o777 == 0o640
    events = stored_events(root)
    assert len([e for e in events if isinstance(e, RunAbandoned)]) == 1
    (completed,) = [e for e in events if isinstance(e, RunCompleted)]
    assert completed.reason is TerminationReason.ABANDONED
    again = ralph("abandon", run, cwd=root)
    assert again.returncode == 2
    assert "is finished already (abandoned)" in again.stderr


def test_a_prompt_that_is_a_symbolic_link_is_refused_and_its_target_untouched(
    tmp_path: Path,
) -> None:
    """PROMPT.md links to a private file outside the workspace: exit 2 naming the link,
    nothing stored, and the target keeps its mode."""
    root = _workspace(tmp_path)
    secret = tmp_path / "secret.txt"
    secret.write_text("private task\n")
    secret.chmod(0o600)
    (root / "PROMPT.md").unlink()
    (root / "PROMPT.md").symlink_to(secret)
    result = ralph("run", cwd=root)
    assert result.returncode == 2, result.stdout + result.stderr
    assert "is a symbolic link" in result.stderr
    assert secret.stat().st_mode & 0o777 == 0o600
    assert not WorkspaceLayout(root=root).store.exists()


def test_an_agent_swapping_the_prompt_for_a_link_gets_no_chmod_through_it(
    tmp_path: Path,
) -> None:
    """The agent replaces PROMPT.md by a link to a 0600 file outside the workspace; at the
    end ralph gives no permissions back through the link: the target stays 0600."""
    root = _workspace(tmp_path)
    secret = tmp_path / "secret.txt"
    secret.write_text("private\n")
    secret.chmod(0o600)
    (root / ".agent" / "swap").write_text(str(secret))
    result = ralph("run", cwd=root)
    assert result.returncode == 0, result.stdout + result.stderr
    assert os.path.islink(root / "PROMPT.md")
    assert secret.stat().st_mode & 0o777 == 0o600
    restored = [e for e in stored_events(root) if isinstance(e, PromptPermissionsRestored)]
    assert [r.path for r in restored] == [""]
