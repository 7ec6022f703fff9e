"""Real git workspaces driven by the scripted agent, for the runtime's tests."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

from pipeline.app.workspace import drive, open_workspace, resolve_prompt
from pipeline.engine import DurableRun
from pipeline.events import PipelineEvent
from pipeline.handlers.runtime import WorkspaceLayout
from pipeline.handlers.store import SqliteEventStore

PYTHON = sys.executable
RALPH = [PYTHON, "-m", "pipeline.app.cli"]
ROOT = Path(__file__).resolve().parents[2]

FINISH_EVERYTHING = """
[[default]]
write.".agent/out/plan.md" = "1. do it"
write.".agent/out/status" = "completed\\ndone"
write.".agent/out/issues.md" = ""
write.".agent/out/commit-message" = "Do it"
write."work.txt" = "done"
"""
"""One step that reports success for every role (each role reads only its own file) and
changes the work tree (``work.txt``), so that the run has something to commit: a run that
commits nothing ends ``no_changes``."""


SHELL_REPORTS = """
mkdir -p .agent/out
printf '1. do it' > .agent/out/plan.md
printf 'completed\\ndone' > .agent/out/status
: > .agent/out/issues.md
printf 'Do it' > .agent/out/commit-message
echo "$$" >> work.txt
"""
"""Shell lines of a shell-script agent that report success for whichever role runs (each
reads only its own file) and change the work tree, so the run has something to commit."""

COUNT_CALLS = """
n=$(cat .ralph/calls 2>/dev/null || echo 0)
n=$((n + 1))
echo "$n" > .ralph/calls
cat > ".ralph/prompt-$n.md"
"""
"""Shell lines that number this call and keep its prompt (given on stdin) as
``.ralph/prompt-N.md``."""


def then_finish(kind: str, first_steps: str) -> str:
    """A script where ``kind`` takes ``first_steps`` (TOML), then every role succeeds."""
    return first_steps + FINISH_EVERYTHING.replace("[[default]]", f"[[{kind}]]") + FINISH_EVERYTHING


def hanging_developer(root: Path, marker: str) -> Path:
    """A workspace whose developer hangs (its child process carries ``marker`` in its
    command line, for :func:`processes_with`), and whose every role then succeeds."""
    script = then_finish(
        "development",
        f"""
[[development]]
spawn = ["{PYTHON}", "-c", "import time; time.sleep(300)", "{marker}"]
hang = true
""",
    )
    return make_workspace(root, scripts={"s.toml": script}, agents={"main": scripted("s.toml")})


def scripted(script: str) -> list[str]:
    """The command of a scripted agent following ``.ralph/<script>``."""
    return [PYTHON, "-m", "pipeline.app.agents.scripted", f".ralph/{script}"]


def make_workspace(
    root: Path,
    *,
    scripts: dict[str, str],
    agents: dict[str, Sequence[str]],
    chains: str = 'default = ["main"]',
    budgets: str = "max_retries_per_agent = 2\nbackoff_base_ms = 10\nbackoff_cap_ms = 20",
    extra: str = "",
    prompt: str = "Make the tests pass.\n",
    agent_options: str = "timeout_s = 60\ninactivity_timeout_s = 30",
    sandbox: str = 'mode = "off"',
) -> Path:
    """A git repository at ``root`` with PROMPT.md, ralph.toml and scripts under .ralph/.

    The sandbox is off unless ``sandbox`` says otherwise (the body of ``[sandbox]``; empty:
    none, so the default): these workspaces test the loop and its defences without it, and
    their agents keep notes in ``.ralph/``, which a sandboxed agent may not write."""
    root.mkdir(parents=True, exist_ok=True)
    for args in (
        ["init", "--quiet", "--initial-branch", "main"],
        ["config", "user.name", "test"],
        ["config", "user.email", "test@example.invalid"],
        ["config", "commit.gpgsign", "false"],
    ):
        subprocess.run(["git", *args], cwd=root, check=True)
    (root / "PROMPT.md").write_text(prompt)
    (root / ".ralph").mkdir(exist_ok=True)
    for name, text in scripts.items():
        (root / ".ralph" / name).write_text(text)
    blocks = "\n".join(
        f"[agents.{name}]\ncommand = {json.dumps(list(command))}\n{agent_options}\n"
        for name, command in agents.items()
    )
    table = f"[sandbox]\n{sandbox}\n" if sandbox else ""
    config = f"{extra}\n{table}[budgets]\n{budgets}\n\n{blocks}\n[chains]\n{chains}\n"
    (root / "ralph.toml").write_text(config)
    (root / "README.md").write_text("a repository\n")
    subprocess.run(["git", "add", "README.md", "PROMPT.md", "ralph.toml"], cwd=root, check=True)
    subprocess.run(["git", "commit", "--quiet", "-m", "start"], cwd=root, check=True)
    return root


def commit_all(root: Path, message: str = "the person's change") -> None:
    """Commit everything in ``root``'s work tree, as a person does before ``ralph run``."""
    subprocess.run(["git", "add", "--all"], cwd=root, check=True)
    subprocess.run(["git", "commit", "--quiet", "-m", message], cwd=root, check=True)


def run_here(root: Path) -> DurableRun:
    """Start a run in ``root`` in this process (agents are real subprocesses)."""
    workspace = open_workspace(root)
    return drive(workspace, prompt=resolve_prompt(workspace, None, None), run_id=None)


def events_of(root: Path, run: DurableRun) -> list[PipelineEvent]:
    """The run's stored events."""
    with SqliteEventStore(WorkspaceLayout(root=root).store) as store:
        return list(store.read(run.run_id))


def stored_events(root: Path) -> list[PipelineEvent]:
    """The events of the one run in ``root``'s store."""
    with SqliteEventStore(WorkspaceLayout(root=root).store) as store:
        (run,) = store.runs()
        return list(store.read(run.run_id))


def start_ralph(*args: str, cwd: Path) -> subprocess.Popen[str]:
    """``ralph ARGS`` started in the background, its output captured."""
    env = {**os.environ, "COLUMNS": "160", "PYTHONPATH": str(ROOT)}
    return subprocess.Popen(
        [*RALPH, *args],
        cwd=cwd,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def ralph(
    *args: str, cwd: Path, timeout: float = 120, env: Mapping[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """``ralph ARGS`` as a real subprocess (``env``: variables added to this process's)."""
    env = {**os.environ, "COLUMNS": "160", "PYTHONPATH": str(ROOT), **(env or {})}
    return subprocess.run(
        [*RALPH, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout
    )


def in_mount_namespace(
    script: str, cwd: Path, timeout: float = 300
) -> subprocess.CompletedProcess[str]:
    """``sh -c SCRIPT`` in a private user and mount namespace (``unshare -rm``), where it may
    mount read-only folders or a small tmpfs that nobody else sees; ``ralph`` in it runs this
    checkout."""
    env = {**os.environ, "COLUMNS": "160", "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        ["unshare", "-rm", "sh", "-c", script],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def processes_with(marker: str) -> list[int]:
    """Pids of live processes whose command line contains ``marker``."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes()
            status = (entry / "status").read_text()
        except OSError:
            continue
        if marker.encode() in cmdline and "\nState:\tZ" not in status:
            found.append(int(entry.name))
    return found
