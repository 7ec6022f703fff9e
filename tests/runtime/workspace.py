"""Real git workspaces driven by the scripted agent, for the runtime's tests."""

from __future__ import annotations

import json
import os
import resource
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from pipeline.app.workspace import drive, open_workspace, resolve_prompt
from pipeline.engine import DurableRun
from pipeline.events import PipelineEvent
from pipeline.handlers.runtime import WorkspaceLayout
from pipeline.handlers.store import SqliteEventStore
from tests.support import init_repository

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


WORK = """
[[default]]
write."work.txt" = "the work\\n"
write.".agent/out/plan.md" = "1. do it"
write.".agent/out/status" = "completed\\ndone"
write.".agent/out/issues.md" = ""
write.".agent/out/commit-message" = "Do it"
"""
"""Every role succeeds; the first invocation leaves work to commit (``work.txt``, the same
text each time), later ones none."""

ITERATE = """
[[default]]
write.".agent/out/plan.md" = "1. do it"
write.".agent/out/status" = "partial\\nmore to do"
write.".agent/out/issues.md" = ""
write.".agent/out/commit-message" = "Do a part"
"""
"""Every role succeeds; development reports partial progress, so the run goes on until its
iteration budget is spent (each step the same, so a step taken twice changes nothing)."""

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

OWN_FILE = SHELL_REPORTS.replace('echo "$$" >> work.txt', 'echo "$PWD" > "${PWD##*/}.txt"')
"""A shell agent that reports success and writes a file named after its worktree (so that runs
in worktrees of their own land without conflicts)."""

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


def gate(name: str, script: str, timeout_s: int = 60) -> str:
    """A ``[[gates]]`` table running ``sh -c SCRIPT``, for ``make_workspace(extra=...)``."""
    return (
        f'[[gates]]\nname = "{name}"\nargv = ["sh", "-c", {json.dumps(script)}]\n'
        f"timeout_s = {timeout_s}\n"
    )


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
    init_repository(root)
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


def sandboxed_shell_workspace(
    root: Path,
    script: Path,
    body: str,
    *,
    max_iterations: int,
    retries: int = 1,
    extra: str = "",
) -> Path:
    """A workspace at ``root`` whose one agent is the shell script ``script`` (written here,
    outside the repository: it reads its prompt, runs ``body``, then writes the reports every
    role reads), in a sandbox that must work, with no review pass; ``extra`` as for
    :func:`make_workspace`. How a hostile agent is set loose in the adversarial tests."""
    script.write_text("#!/bin/sh\ncat > /dev/null\n" + SHELL_REPORTS + body)
    script.chmod(0o755)
    budgets = (
        f"max_iterations = {max_iterations}\nmax_review_passes = 0\n"
        f"max_retries_per_agent = {retries}"
    )
    return make_workspace(
        root,
        scripts={},
        agents={"main": [str(script)]},
        budgets=budgets,
        sandbox='mode = "required"',
        extra=extra,
    )


def claude_preset_workspace(
    folder: Path, home: Path, body: str, *, max_iterations: int = 1, retries: int = 0
) -> tuple[Path, dict[str, str]]:
    """A workspace at ``folder/ws`` whose one agent runs Claude Code's preset, here a shell
    script named ``claude`` (in ``folder/bin``) running ``body``, in a sandbox that must
    work; and the variables to run ralph there with (``home`` as ``HOME``, the script first
    on ``PATH``)."""
    programs = folder / "bin"
    programs.mkdir()
    (programs / "claude").write_text("#!/bin/sh\ncat > /dev/null\n" + SHELL_REPORTS + body)
    (programs / "claude").chmod(0o755)
    root = folder / "ws"
    make_workspace(
        root,
        scripts={},
        agents={},
        chains='default = ["c"]',
        budgets=(
            f"max_iterations = {max_iterations}\nmax_review_passes = 0\n"
            f"max_retries_per_agent = {retries}"
        ),
        sandbox='mode = "required"',
    )
    config = root / "ralph.toml"
    config.write_text(config.read_text() + '\n[agents.c]\npreset = "claude"\ntimeout_s = 60\n')
    subprocess.run(["git", "commit", "--quiet", "-am", "claude"], cwd=root, check=True)
    return root, {"HOME": str(home), "PATH": f"{programs}{os.pathsep}{os.environ['PATH']}"}


def git(root: Path, *args: str) -> str:
    """``git ARGS`` in ``root`` (the real one, checked), its output stripped."""
    return subprocess.run(
        ["git", *args], cwd=root, capture_output=True, text=True, check=True
    ).stdout.strip()


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


def listed_worktrees(root: Path, *args: str) -> list[dict[str, object]]:
    """The rows of ``ralph worktrees list --json ARGS`` in ``root``."""
    shown = ralph("worktrees", "list", "--json", *args, cwd=root)
    assert shown.returncode == 0, shown.stderr
    return [json.loads(line) for line in shown.stdout.splitlines()]


def completed_runs(root: Path, count: int) -> list[dict[str, object]]:
    """``count`` runs at once, each in its own worktree, all completed; their listing."""
    started = [start_ralph("run", "--worktree", "--quiet", cwd=root) for _ in range(count)]
    for process in started:
        out, err = process.communicate(timeout=180)
        assert process.returncode == 0, out + err
    return listed_worktrees(root)


def log_of(worktree: Mapping[str, object]) -> list[PipelineEvent]:
    """The log of the run that worked in ``worktree`` (a ``worktrees list --json`` row)."""
    with SqliteEventStore(WorkspaceLayout(root=Path(str(worktree["path"]))).store) as store:
        return list(store.read(str(worktree["run"])))


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


def ralph_on_a_full_disk(
    *args: str, cwd: Path, limit_bytes: int, timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    """``ralph ARGS`` as a real subprocess whose files may grow to ``limit_bytes`` and no
    further (``RLIMIT_FSIZE``): a write past it fails with ``EFBIG``, as on a full disk."""

    def limited() -> None:
        # In the child before exec: a write past the limit fails instead of killing it.
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit_bytes, limit_bytes))

    env = {**os.environ, "COLUMNS": "160", "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        [*RALPH, *args],
        cwd=cwd,
        env=env,
        preexec_fn=limited,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
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


def wait_for(
    condition: Callable[[], object],
    what: str,
    *,
    within_s: float = 60,
    alive: subprocess.Popen[Any] | None = None,
    every_s: float = 0.05,
) -> None:
    """Poll ``condition`` until it holds, failing with ``what`` (what never happened) once
    ``within_s`` pass, or with ``alive``'s output as soon as that process (the one that should
    make the condition true) ends first."""
    deadline = time.monotonic() + within_s
    while not condition():
        if alive is not None and alive.poll() is not None:
            raise AssertionError(f"{what}: the process ended first", alive.communicate())
        assert time.monotonic() < deadline, what
        time.sleep(every_s)


def wait_for_agent(run: subprocess.Popen[Any], marker: str, within_s: float = 60) -> None:
    """Wait until ``run``'s agent is at work (a process carries ``marker``, as
    :func:`hanging_developer` makes it), failing if ``run`` ends first."""
    wait_for(
        lambda: processes_with(marker), "the agent never started", within_s=within_s, alive=run
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
