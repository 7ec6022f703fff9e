"""A newcomer's first hour, through real ``ralph`` processes: ``ralph init`` in a repository
of their own with no agent CLI installed, the example agent that ships wrapping a tool of
theirs, a run whose agent obeys its prompt (and is reviewed), what the run says about the
sandbox, ``status``, ``resume`` and ``report`` afterwards, and ``ralph emit`` outside a run."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from pipeline.app.cli._init import EXAMPLE_AGENT
from pipeline.events import (
    FinalValidationPassed,
    ReviewPassStarted,
    RunCompleted,
    SandboxChecked,
    TerminationReason,
    TopicPublished,
)
from tests.runtime.workspace import (
    RALPH,
    ROOT,
    SHELL_REPORTS,
    git,
    make_workspace,
    ralph,
    stored_events,
)

pytestmark = pytest.mark.slow  # whole runs in subprocesses: seconds a test

APP = "def add(a, b):\n    return a - b\n"
TEST = """\
import unittest

from app import add


class AddTest(unittest.TestCase):
    def test_adds(self):
        self.assertEqual(add(2, 3), 5)
"""
TOOL = """\
# The newcomer's own tool: reads a prompt on stdin, edits files, prints its answer.
cat > /dev/null
case "$RALPH_PROMPT_KIND" in
planning) echo "1. Make add() add." ;;
development) sed -i 's/a - b/a + b/' app.py && echo "add() adds now" ;;
review) ;;
commit_message) echo "Make add() add" ;;
esac
"""
WITHHELD = "NEWCOMER_SERVICE_URL"
SECRET = "https://newcomer:s3cr3t-value@service.invalid"


def _only_git_on_path(tmp: Path) -> str:
    """A PATH with git and nothing else: no agent CLI, whatever this machine has."""
    folder = tmp / "path"
    folder.mkdir(exist_ok=True)
    program = shutil.which("git")
    assert program is not None
    (folder / "git").symlink_to(program)
    return str(folder)


def _init(root: Path, *args: str, path: str) -> subprocess.CompletedProcess[str]:
    """``ralph init ARGS`` in ``root`` with ``path`` as PATH."""
    return ralph("init", *args, cwd=root, env={"PATH": path, "COLUMNS": "200"}, timeout=60)


def _repository(root: Path) -> Path:
    """The newcomer's repository: a bug, its unittest test, their tool; committed."""
    (root / "tests").mkdir(parents=True)
    (root / "tools").mkdir()
    (root / "app.py").write_text(APP)
    (root / "tests" / "test_app.py").write_text(TEST)
    (root / "tools" / "work.sh").write_text(TOOL)
    for args in (
        ["init", "--quiet", "--initial-branch", "main"],
        ["config", "user.name", "newcomer"],
        ["config", "user.email", "newcomer@example.invalid"],
        ["add", "."],
        ["commit", "--quiet", "-m", "add() is wrong"],
    ):
        subprocess.run(["git", *args], cwd=root, check=True)
    return root


@pytest.fixture(scope="module")
def newcomer(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    """``ralph init`` with only git on PATH, the example agent uncommented to wrap the tool,
    the task written, and ``ralph run`` with the defaults (the sandbox on where bubblewrap
    works); the repository and what each command printed."""
    tmp = tmp_path_factory.mktemp("newcomer")
    root = _repository(tmp / "repo")
    init = _init(root, path=_only_git_on_path(tmp))
    assert init.returncode == 0, init.stderr
    config = (root / "ralph.toml").read_text()
    commented = f'# [agents.mine]\n# command = ["sh", "{EXAMPLE_AGENT}", "my-tool", "--its-flag"]'
    assert commented in config
    config = config.replace(
        commented, f'[agents.mine]\ncommand = ["sh", "{EXAMPLE_AGENT}", "sh", "tools/work.sh"]'
    )
    config = config.replace("default = []", 'default = ["mine"]')
    (root / "ralph.toml").write_text(config)
    (root / "PROMPT.md").write_text("Make add() in app.py add its arguments.\n")
    run = ralph("run", "--plain", cwd=root, timeout=300, env={WITHHELD: SECRET})
    printed = {
        "init": init.stdout + init.stderr,
        "config": config,
        "run": run.stdout,
        "run.err": run.stderr,
        "run.code": str(run.returncode),
    }
    return root, printed


def test_init_with_no_agent_cli_writes_none_and_says_what_it_looked_for(
    newcomer: tuple[Path, dict[str, str]],
) -> None:
    """No [agents.claude] written when no claude is on PATH: the CLIs looked for, how to
    install each, and the example agent, commented, that runs once uncommented."""
    _root, printed = newcomer
    said = printed["init"]
    assert "no agent CLI found on PATH (looked for claude, codex, gemini, opencode, aider)" in said
    assert "npm install -g @anthropic-ai/claude-code" in said
    assert str(EXAMPLE_AGENT) in said
    assert "[agents.claude]\n" not in printed["config"].replace("# [agents.claude]", "")
    assert 'preset = "claude"\n' not in printed["config"]


def test_init_detects_a_unittest_only_repository(newcomer: tuple[Path, dict[str, str]]) -> None:
    """Tests written with unittest and no pytest anywhere: the final check is unittest's
    discovery (pytest may not even be installed), and it passes once the bug is fixed."""
    _root, printed = newcomer
    assert (
        'validate = ["python3", "-m", "unittest", "discover", "-s", "tests"]' in (printed["config"])
    )
    assert "Final check: python3 -m unittest discover -s tests" in printed["init"]


def test_an_agent_that_obeys_its_prompt_is_reviewed_before_completion(
    newcomer: tuple[Path, dict[str, str]],
) -> None:
    """The example agent publishes LOOP_COMPLETE as the development prompt asks; with the
    starter's settings the run still reviews the work before the final check (it used to
    go straight to validation: review pass 0) and completes."""
    root, printed = newcomer
    assert printed["run.code"] == "0", printed["run"] + printed["run.err"]
    events = stored_events(root)
    kinds = [type(e) for e in events]
    claimed = next(
        i
        for i, e in enumerate(events)
        if isinstance(e, TopicPublished) and e.topic == "LOOP_COMPLETE"
    )
    reviewed = kinds.index(ReviewPassStarted)
    validated = kinds.index(FinalValidationPassed)
    assert claimed < reviewed < validated
    (completed,) = [e for e in events if isinstance(e, RunCompleted)]
    assert completed.reason is TerminationReason.COMPLETED
    assert "a + b" in (root / "app.py").read_text()


def test_the_run_names_the_variables_it_withholds_never_their_values(
    newcomer: tuple[Path, dict[str, str]],
) -> None:
    """With the sandbox on, the run's start names each variable no agent gets, and how to
    pass one ([sandbox] pass_env); the value appears nowhere. The starter shows pass_env."""
    root, printed = newcomer
    checked = [e for e in stored_events(root) if isinstance(e, SandboxChecked)]
    if not checked or not checked[0].on:
        pytest.skip("bubblewrap cannot run here: the sandbox is off")
    said = printed["run.err"]
    assert WITHHELD in said
    assert "[sandbox] pass_env" in said
    assert SECRET not in said + printed["run"]
    assert "# pass_env = [" in printed["config"]


def test_status_shows_an_unknown_model_once(newcomer: tuple[Path, dict[str, str]]) -> None:
    """The example agent reports no usage: cost by model is one 'unknown', not 'unknown
    unknown'."""
    root, _printed = newcomer
    status = ralph("status", cwd=root, env={"COLUMNS": "200"})
    assert status.returncode == 0, status.stderr
    row = next(line for line in status.stdout.splitlines() if "cost by model" in line)
    assert re.search(r"cost by model\s+│\s+unknown\s+│", row), row


def test_resume_of_a_finished_run_says_so(newcomer: tuple[Path, dict[str, str]]) -> None:
    """``ralph resume`` after the run completed: one line saying it finished and how, its
    exit status the run's (0), and nothing recorded."""
    root, _printed = newcomer
    before = len(stored_events(root))
    resumed = ralph("resume", cwd=root)
    assert resumed.returncode == 0, resumed.stderr
    assert "has finished already (completed, exit status 0): nothing to resume" in resumed.stdout
    assert len(stored_events(root)) == before


def test_init_force_replaces_an_existing_ralph_toml(tmp_path: Path) -> None:
    """Without --force an existing ralph.toml is kept and the refusal names --force; with it
    the file is replaced by a fresh starter."""
    path = _only_git_on_path(tmp_path)
    (tmp_path / "ralph.toml").write_text("# mine\n")
    kept = _init(tmp_path, path=path)
    assert kept.returncode == 2
    assert "ralph init --force" in kept.stderr
    assert (tmp_path / "ralph.toml").read_text() == "# mine\n"
    forced = _init(tmp_path, "--force", path=path)
    assert forced.returncode == 0, forced.stderr
    assert "[budgets]" in (tmp_path / "ralph.toml").read_text()


def test_init_writes_the_agents_it_finds_and_no_other(tmp_path: Path) -> None:
    """With codex on PATH (and no claude), the starter configures codex alone."""
    path = _only_git_on_path(tmp_path)
    codex = Path(path) / "codex"
    codex.write_text("#!/bin/sh\necho codex 0.0.1\n")
    codex.chmod(0o755)
    done = _init(tmp_path, path=path)
    assert done.returncode == 0, done.stderr
    text = (tmp_path / "ralph.toml").read_text()
    assert '[agents.codex]\npreset = "codex"' in text
    assert 'default = ["codex"]' in text
    assert "[agents.claude]" not in text


def test_a_report_in_the_work_tree_does_not_stop_the_next_run(tmp_path: Path) -> None:
    """The README's ``ralph report --html report.html``, then ``ralph run``: the run starts
    (it used to refuse the dirty tree, exit 2), and no commit takes the report."""
    # Only the developer changes files (a reviewer's change would be left uncommitted).
    developer_works = SHELL_REPORTS.replace(
        'echo "$$"', '[ "$RALPH_ROLE" != developer ] || echo "$$"'
    )
    root = make_workspace(
        tmp_path / "ws", scripts={}, agents={"main": ["sh", "-c", developer_works]}
    )
    first = ralph("run", "--plain", cwd=root)
    assert first.returncode == 0, first.stdout + first.stderr
    report = ralph("report", "--html", "report.html", "--markdown", "report.md", cwd=root)
    assert report.returncode == 0, report.stderr
    second = ralph("run", "--plain", cwd=root)
    assert second.returncode == 0, second.stdout + second.stderr
    committed = git(root, "log", "--name-only", "--format=").split()
    assert "report.html" not in committed
    assert "report.md" not in committed
    assert (root / "report.html").is_file()


def test_emit_in_a_workspace_without_a_marker_falls_back_and_says_where(tmp_path: Path) -> None:
    """Seed 003, AC5: no .ralph/current-events, and ralph emit writes .ralph/events.jsonl
    (exit 0), saying so on stderr; outside any workspace it still refuses."""
    base = {k: v for k, v in os.environ.items() if not k.startswith("RALPH_")}
    env = {**base, "PYTHONPATH": str(ROOT)}

    def emit(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [*RALPH, "emit", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=60
        )

    workspace = tmp_path / "ws"
    (workspace / ".ralph").mkdir(parents=True)
    done = emit("build.done", "by hand", cwd=workspace)
    assert done.returncode == 0, done.stderr
    written = workspace / ".ralph" / "events.jsonl"
    assert '"topic":"build.done"' in written.read_text()
    assert str(written) in done.stderr
    assert "no run reads" in done.stderr
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    refused = emit("build.done", cwd=outside)
    assert refused.returncode == 2
    assert "no run to emit to" in refused.stderr
