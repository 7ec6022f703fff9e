"""The mistakes of a newcomer's first hour, through real ``ralph`` processes in real git
repositories: a mistyped key, a ralph-orchestrator setting carried over by hand, a test runner
that is not installed, translating over an existing ``ralph.toml``, and reading runs where
none was stored. Each gets one clear line saying what is wrong and what to do, a non-zero
exit, no traceback, and no store made."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from pipeline.events import HumanResponseReceived
from pipeline.handlers.runtime import WorkspaceLayout
from tests.runtime.test_loop_control import QUESTION
from tests.runtime.test_loop_control import _pending as pending
from tests.runtime.test_loop_control import workspace as question_workspace
from tests.runtime.workspace import (
    RALPH,
    ROOT,
    make_workspace,
    ralph,
    scripted,
    start_ralph,
    stored_events,
)
from tests.support import init_repository

pytestmark = pytest.mark.slow  # real ralph processes in real repositories: seconds a test

ORCHESTRATOR_YML = ROOT / "tests" / "fixtures" / "orchestrator" / "code-assist.yml"


def _refused(result: subprocess.CompletedProcess[str], root: Path) -> str:
    """What a refused command said on stderr, once its exit, silence on tracebacks and the
    store it did not make are checked."""
    assert result.returncode == 2, result.stdout + result.stderr
    assert "Traceback" not in result.stdout + result.stderr
    assert not WorkspaceLayout(root=root).store.exists()
    return " ".join(result.stderr.split())  # as read, whatever the terminal's width


def test_a_mistyped_key_names_the_key_it_is_closest_to(tmp_path: Path) -> None:
    """``max_iteratons`` in ``[budgets]``: ``ralph run`` refuses it before any run starts and
    names ``max_iterations``, the key the person meant."""
    root = make_workspace(
        tmp_path / "ws",
        scripts={"s.toml": ""},
        agents={"main": scripted("s.toml")},
        budgets="max_iteratons = 3",
    )
    said = _refused(ralph("run", cwd=root), root)
    assert "budgets.max_iteratons: unknown key (did you mean 'max_iterations'?)" in said


def test_a_ralph_orchestrator_setting_says_where_it_goes_in_ralph_toml(tmp_path: Path) -> None:
    """ralph-orchestrator's top-level ``max_iterations`` and ``event_loop`` copied into
    ``ralph.toml``: each is named as ralph-orchestrator's, with the key that holds it here
    where there is one, and ``ralph init --from`` for a whole ``ralph.yml``."""
    root = make_workspace(
        tmp_path / "ws",
        scripts={"s.toml": ""},
        agents={"main": scripted("s.toml")},
        extra='max_iterations = 3\n\n[event_loop]\nstarting_event = "build.start"\n',
    )
    said = _refused(ralph("run", cwd=root), root)
    assert (
        "max_iterations: unknown key (a ralph-orchestrator setting: here it is [budgets] "
        "max_iterations; ralph init --from ralph.yml translates a whole ralph.yml)"
    ) in said
    assert "event_loop: unknown key (a ralph-orchestrator setting: ralph init --from" in said


def test_a_chain_of_a_preset_whose_cli_is_missing_starts_no_run(tmp_path: Path) -> None:
    """``preset = "claude"`` as every role's only agent, with no ``claude`` on PATH: ``ralph
    run`` refuses before anything is stored, naming the program and how to install it, and
    PROMPT.md keeps its mode (a run that started made it read-only, then stopped at once as
    ``agent_chain_exhausted`` for a person to resume)."""
    root = make_workspace(
        tmp_path / "ws", scripts={}, agents={}, extra='[agents.main]\npreset = "claude"\n'
    )
    only_git = tmp_path / "path"
    only_git.mkdir()
    git = shutil.which("git")
    assert git is not None
    (only_git / "git").symlink_to(git)
    said = _refused(ralph("run", cwd=root, env={"PATH": str(only_git)}), root)
    assert "agents.main.preset: program 'claude' not found" in said
    assert "install Claude Code: npm install -g @anthropic-ai/claude-code" in said
    assert (root / "PROMPT.md").stat().st_mode & 0o200


def test_a_repository_where_git_knows_no_committer_starts_no_run(tmp_path: Path) -> None:
    """No ``user.name`` nor ``user.email`` anywhere git looks: ``ralph run`` refuses before
    anything is stored, with the two commands that set them (a run started, planned and
    developed, paying its agents, and stopped at its first commit)."""
    root = make_workspace(
        tmp_path / "ws",
        scripts={"s.toml": '[[default]]\nwrite = { ".agent/out/plan.md" = "p" }\n'},
        agents={"main": scripted("s.toml")},
    )
    result = subprocess.run(
        [*RALPH, "run"],
        cwd=root,
        env=_no_committer(root, tmp_path),
        capture_output=True,
        text=True,
        timeout=120,
    )
    said = _refused(result, root)
    assert "git does not know who commits in" in said
    assert 'git config user.name "Your Name" && git config user.email' in said


def test_a_run_resumed_where_git_knows_no_committer_goes_no_further(tmp_path: Path) -> None:
    """An interrupted run resumed once git's identity is gone: ``ralph resume`` refuses with
    the two commands, and records nothing (it would have paid its agents up to its next
    commit, and stopped there)."""
    root = question_workspace(tmp_path, QUESTION, loop="human_timeout_s = 120")
    process = start_ralph("run", cwd=root)
    try:
        pending(root)
        process.send_signal(signal.SIGINT)
        out, err = process.communicate(timeout=120)
    finally:
        process.kill()
    assert process.returncode == 130, out + err
    before = stored_events(root)
    result = subprocess.run(
        [*RALPH, "resume"],
        cwd=root,
        env=_no_committer(root, tmp_path),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 2, result.stdout + result.stderr
    said = " ".join(result.stderr.split())
    assert "Traceback" not in said
    assert "git does not know who commits in" in said
    assert stored_events(root) == before


def _no_committer(root: Path, tmp_path: Path) -> dict[str, str]:
    """The environment, with ``root``'s repository changed, in which git knows no committer:
    no ``user.name`` nor ``user.email`` in its configuration, no global one, none in the
    environment, and no name made up from the host's."""
    for key in ("user.name", "user.email"):
        subprocess.run(["git", "config", "--unset", key], cwd=root, check=True)
    subprocess.run(["git", "config", "user.useConfigOnly", "true"], cwd=root, check=True)
    home = tmp_path / "no-committer-home"
    home.mkdir()
    unknown = ("EMAIL", "GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL", "GIT_COMMITTER_NAME")
    env = {k: v for k, v in os.environ.items() if k not in unknown and k != "GIT_COMMITTER_EMAIL"}
    env |= {"HOME": str(home), "GIT_CONFIG_GLOBAL": os.devnull}
    return env | {"PYTHONPATH": str(ROOT), "COLUMNS": "160"}


def _pytest_repository(root: Path) -> Path:
    """A repository whose tests are pytest's, with a virtual environment of its own that has
    no pytest, as ``ralph init`` finds them. Its ``.venv/bin/python`` only leaves a mark: the
    workspace's files are the agent's to write, so ralph never runs them outside the
    sandbox."""
    init_repository(root)
    (root / "tests").mkdir()
    (root / "calc.py").write_text("def mul(a, b):\n    return a + b\n")
    (root / "tests" / "test_calc.py").write_text(
        "from calc import mul\n\n\ndef test_mul():\n    assert mul(2, 3) == 6\n"
    )
    venv = root / ".venv"
    (venv / "bin").mkdir(parents=True)
    (venv / "pyvenv.cfg").write_text("home = /usr/bin\ninclude-system-site-packages = false\n")
    (venv / "lib" / "python3.11" / "site-packages").mkdir(parents=True)
    python = venv / "bin" / "python"
    python.write_text(f"#!/bin/sh\ntouch {root.parent / 'ran'}\nexit 1\n")
    python.chmod(0o755)
    return root


def _rows(result: subprocess.CompletedProcess[str]) -> dict[str, str]:
    """``ralph doctor``'s rows by check (printed 400 columns wide: one line a row)."""
    return {line.split("│")[1].strip(): line for line in result.stdout.splitlines() if "│" in line}


def test_init_and_doctor_say_the_test_runner_is_not_installed(tmp_path: Path) -> None:
    """``ralph init`` picks ``.venv/bin/python -m pytest`` as the final check, warns that
    its virtual environment has no pytest and says to check with ``ralph doctor``; ``ralph
    doctor`` fails the check with the install command (also while the starter names no agent
    yet), and passes it once pytest is in its site-packages; the workspace's Python itself
    never ran. Without this a run's every final check failed until a breaker stopped it."""
    root = _pytest_repository(tmp_path / "repo")
    init = ralph("init", cwd=root)
    assert init.returncode == 0, init.stdout + init.stderr
    said = " ".join(init.stderr.split())
    assert ".venv/bin/python has no module 'pytest': install it" in said
    assert "(.venv/bin/python -m pip install pytest)" in said
    assert "check with `ralph doctor`, then `ralph run`." in " ".join(init.stdout.split())
    (root / "PROMPT.md").write_text("Make mul() multiply.\n")
    doctor = ralph("doctor", cwd=root, env={"COLUMNS": "400"})
    assert doctor.returncode == 1, doctor.stdout + doctor.stderr
    assert "Traceback" not in doctor.stdout + doctor.stderr
    rows = _rows(doctor)
    assert "FAIL" in rows["config"]  # no agent named yet: the other checks still run
    assert "FAIL" in rows["validate"]
    assert "has no module 'pytest', so it always fails" in rows["validate"]
    assert ".venv/bin/python -m pip install pytest" in rows["validate"]
    (root / ".venv" / "lib" / "python3.11" / "site-packages" / "pytest").mkdir()
    assert "OK" in _rows(ralph("doctor", cwd=root, env={"COLUMNS": "400"}))["validate"]
    assert not (tmp_path / "ran").exists()


def test_doctor_asks_a_python_outside_the_workspace_for_the_module(tmp_path: Path) -> None:
    """``validate = ["python3", "-m", "pytest"]`` with a ``python3`` on PATH that has no
    pytest (this Python without its site-packages): ``ralph doctor`` asks it and fails the
    check; with this Python, which has pytest, the check passes."""
    root = _pytest_repository(tmp_path / "repo")
    (root / "ralph.toml").write_text('validate = ["python3", "-m", "pytest", "-q"]\n')
    (root / "PROMPT.md").write_text("Make mul() multiply.\n")
    folder = tmp_path / "bin"
    folder.mkdir()
    python = folder / "python3"
    python.write_text(f'#!/bin/sh\nexec {sys.executable} -S "$@"\n')
    python.chmod(0o755)
    env = {"COLUMNS": "400", "PATH": f"{folder}{os.pathsep}{os.environ['PATH']}"}
    rows = _rows(ralph("doctor", cwd=root, env=env))
    assert "has no module 'pytest', so it always fails" in rows["validate"]
    python.unlink()
    python.symlink_to(sys.executable)
    assert "OK" in _rows(ralph("doctor", cwd=root, env=env))["validate"]


def test_translating_over_an_existing_ralph_toml_says_to_move_it(tmp_path: Path) -> None:
    """``ralph init --from ralph.yml`` where ``ralph init`` wrote a starter: exit 2 telling the
    person to move ``ralph.toml`` away (not to pass ``--force``, which refuses a translation
    too), with and without ``--force``; the file is left as it was."""
    root = tmp_path / "repo"
    init_repository(root)
    assert ralph("init", cwd=root).returncode == 0
    starter = (root / "ralph.toml").read_text()
    for args in ((), ("--force",)):
        said = _refused(ralph("init", "--from", str(ORCHESTRATOR_YML), *args, cwd=root), root)
        assert "move" in said
        assert f"then run ralph init --from {ORCHESTRATOR_YML} again" in said
        assert "replace it with ralph init --force" not in said
    assert (root / "ralph.toml").read_text() == starter


READERS = (("status",), ("runs",), ("events",), ("report", "--html", "r.html"))
"""The commands a newcomer reads a run with."""


@pytest.mark.parametrize("command", READERS)
def test_reading_a_repository_with_no_run_says_how_to_start_one(
    tmp_path: Path, command: tuple[str, ...]
) -> None:
    """A reading command before the first run: exit 2, the store it looked for, and that
    ``ralph run`` starts one; no store is made."""
    root = tmp_path / "repo"
    init_repository(root)
    said = _refused(ralph(*command, cwd=root), root)
    assert "no event store at .git/ralph/pipeline.db: no run was stored there yet" in said
    assert "`ralph run` starts one" in said


def test_init_outside_a_git_repository_says_ralph_run_needs_one(tmp_path: Path) -> None:
    """``ralph init`` in a folder that is no git repository writes its starter and warns that
    ``ralph run`` needs one (``git init``); in a repository it says nothing of the kind."""
    plain = tmp_path / "plain"
    plain.mkdir()
    done = ralph("init", cwd=plain)
    assert done.returncode == 0, done.stdout + done.stderr
    said = " ".join(done.stderr.split())
    assert f"{plain} is not a git repository, which ralph run needs: git init" in said
    repository = init_repository(tmp_path / "repo")
    inside = ralph("init", cwd=repository)
    assert inside.returncode == 0, inside.stdout + inside.stderr
    assert "not a git repository" not in inside.stderr


def test_an_answer_without_its_question_id_is_told_the_command_that_answers(
    tmp_path: Path,
) -> None:
    """``ralph respond TEXT`` with no ``--question`` while a run waits: exit 2 naming the
    question and ``--question ID``, nothing answered (typer said only that an option was
    missing); then the command it gives answers, and the run completes."""
    root = question_workspace(tmp_path, QUESTION, loop="human_timeout_s = 120")
    process = start_ralph("run", cwd=root)
    try:
        _run_id, question = pending(root)
        blind = ralph("respond", "Use SQLite", cwd=root)
        said = _refused_answer(blind)
        assert f"waits on {question.question_id}" in said
        assert "'Which database should I use?'" in said
        assert f"answer it with --question {question.question_id}" in said
        answered = ralph("respond", "Use SQLite", "--question", question.question_id, cwd=root)
        assert answered.returncode == 0, answered.stdout + answered.stderr
        out, err = process.communicate(timeout=120)
    finally:
        process.kill()
    assert process.returncode == 0, out + err
    responses = [e for e in stored_events(root) if isinstance(e, HumanResponseReceived)]
    assert [r.text for r in responses] == ["Use SQLite"]


def _refused_answer(result: subprocess.CompletedProcess[str]) -> str:
    """What a refused ``ralph respond`` said, once its exit and silence on tracebacks are
    checked (its run's store exists: the run made it)."""
    assert result.returncode == 2, result.stdout + result.stderr
    assert "Traceback" not in result.stdout + result.stderr
    return " ".join(result.stderr.split())
