"""The fault-injection sweep: ``ralph run`` stopped by kill -9, SIGINT or SIGTERM at a chosen
point of every kind of step, then ``ralph resume`` until it ends; after each trial the run
must end as it would have, every commit git holds must be in its log exactly once, and
``ralph replay --verify`` (which reconciles the log with git) must pass.

``python -m tests.faults.sweep`` runs every scenario and writes ``benchmarks/faults.json``
and ``benchmarks/FAULTS.md``; ``--sample`` runs the few the test suite runs
(``tests/faults/test_sweep.py``). Points are chosen two ways: the k-th fact of a kind, through
``ralph``'s own seam (``RALPH_FAULT_INJECT``, :mod:`pipeline.app.cli._faults`, with a delay to
land inside the effect that follows), and right after one git command, through a ``git``
on PATH (:mod:`tests.faults.gitfault`).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from attrs import asdict, field, frozen

from pipeline.events import RunCompleted, RunStarted
from pipeline.handlers.runtime import WorkspaceLayout
from tests.faults.commits import commits_in_git, commits_in_log
from tests.faults.gated import CALM, GATE_POINTS, gate_problems
from tests.faults.gitfault import install
from tests.runtime.workspace import (
    FINISH_EVERYTHING,
    ITERATE,
    RALPH,
    ROOT,
    WORK,
    make_workspace,
    scripted,
    stored_events,
)

__all__ = ["SAMPLE", "SCENARIOS", "Scenario", "Trial", "main", "run_trial"]

SIGNALS = (signal.SIGKILL, signal.SIGINT, signal.SIGTERM)
_STOPPED = (130, -signal.SIGKILL, -signal.SIGTERM)
"""Exit codes of a ``ralph`` that a fault stopped: resume it."""

SLOW_DEVELOPER = (
    """
[[development]]
write."work.txt" = "the work\\n"
write.".agent/out/status" = "completed\\ndone"
delay_s = 1.5
"""
    + WORK
)
"""The developer takes 1.5 s: time for a fault to land inside it."""

QUESTION = (
    """
[[development]]
write.".agent/out/status" = "partial\\nmore"
emit = [["human.interact", "Which database should I use?"]]
"""
    + WORK.replace("[[default]]", "[[development]]")
    + WORK
)

CORRECTION = (
    """
[[development]]
write."work.txt" = "the work\\n"
write.".agent/out/status" = "completed\\ndone"
write.".agent/out/response.json" = '''{ action: 'report' }'''

[[format_correction]]
write.".agent/out/response.json" = '{"action": "report", "parameters": {"files": 1}}'
delay_s = 1.0
"""
    + WORK
)


SANDBOXED = 'mode = "required"'
"""The sandbox on (the machine must run bubblewrap), for the sandbox's own points."""


def _plain(script: str, **options: str) -> Callable[[Path], Path]:
    def build(root: Path) -> Path:
        return make_workspace(
            root,
            scripts={"s.toml": script},
            agents={"main": scripted("s.toml")},
            budgets=options.get(
                "budgets",
                "max_iterations = 2\nmax_review_passes = 1\nmax_retries_per_agent = 2\n"
                "backoff_base_ms = 10\nbackoff_cap_ms = 20",
            ),
            extra=options.get("extra", ""),
            sandbox=options.get("sandbox", 'mode = "off"'),
        )

    return build


def _dev_fix(root: Path) -> Path:
    broken = '[[default]]\nprint = "segmentation fault"\nexit = 1\n'
    fixer = (
        '[[dev_fix]]\nwrite = { ".agent/out/status" = "failed\\nThe developer agent crashes." }\n'
        "delay_s = 1.0\n"
    )
    return make_workspace(
        root,
        scripts={"broken.toml": broken, "s.toml": FINISH_EVERYTHING, "fix.toml": fixer},
        agents={
            "broken": scripted("broken.toml"),
            "main": scripted("s.toml"),
            "fixer": scripted("fix.toml"),
        },
        chains='default = ["main"]\ndeveloper = ["broken"]\nfixer = ["fixer"]',
        budgets="max_retries_per_agent = 1\nbackoff_base_ms = 10\nbackoff_cap_ms = 20",
    )


def _rebasing(root: Path) -> Path:
    return _plain(WORK, extra='branch = "work"\nrebase_onto = "main"\n')(root)


@frozen
class Scenario:
    """One fault: where (``phase``), how it is triggered, and how the run must end."""

    name: str
    phase: str
    build: Callable[[Path], Path] = field(repr=False)
    signum: signal.Signals
    fact: str | None = None
    """``<wire tag>:<k>[:<delay>]`` for ralph's seam; None: ``git_after`` instead."""
    git_after: str | None = None
    final_code: int = 0
    damage: str | None = None
    """Done to the store after the fault, before the resume (see :data:`DAMAGE`)."""


def _fact_scenarios() -> list[Scenario]:
    points: list[tuple[str, Callable[[Path], Path], str, int]] = [
        ("planning", _plain(WORK), "planning.planning_started:1", 0),
        ("agent", _plain(SLOW_DEVELOPER), "prompt.prompt_materialized:2:0.5", 0),
        ("development", _plain(WORK), "development.development_iteration_started:1", 0),
        ("commit message", _plain(WORK), "commit.commit_message_generated:1", 0),
        ("after commit", _plain(WORK), "commit.commit_created:1", 0),
        ("checkpoint", _plain(WORK), "misc.checkpoint_saved:2", 0),
        ("checkpoint", _plain(ITERATE), "misc.checkpoint_saved:4", 2),
        ("review", _plain(WORK), "review.review_pass_started:1", 0),
        ("finalizing", _plain(WORK), "misc.finalizing_started:1", 0),
        ("dev-fix", _dev_fix, "dev_fix.dev_fix_triggered:1:0.5", 1),
        (
            "human wait",
            _plain(QUESTION, extra="[loop]\nhuman_timeout_s = 2\n"),
            "agent.topic_published:1:0.5",
            0,
        ),
        (
            "correction turn",
            _plain(
                CORRECTION,
                extra='[hats.developer]\nresponse_schema = "agent-response"\n',
            ),
            "agent.response_submitted:1:0.4",
            0,
        ),
        # In the sandbox: right after it is checked, and inside a sandboxed agent's work.
        ("sandbox", _plain(WORK, sandbox=SANDBOXED), "lifecycle.sandbox_checked:1", 0),
        (
            "sandboxed agent",
            _plain(SLOW_DEVELOPER, sandbox=SANDBOXED),
            "prompt.prompt_materialized:2:0.5",
            0,
        ),
        *GATE_POINTS,
    ]
    return [
        Scenario(
            f"{phase} @ {fact} {signum.name}", phase, build, signum, fact=fact, final_code=code
        )
        for phase, build, fact, code in points
        for signum in SIGNALS
    ]


def _git_scenarios() -> list[Scenario]:
    commit = ["add --all", "diff --cached", "commit --quiet", "rev-parse HEAD"]
    found = [
        Scenario(
            f"commit after `git {after}` {signum.name}",
            "commit",
            _plain(WORK),
            signum,
            git_after=after,
        )
        for after in commit
        for signum in SIGNALS
    ]
    found += [
        Scenario(
            f"rebase after `git rebase` {signum.name}",
            "rebase",
            _rebasing,
            signum,
            git_after="rebase",
        )
        for signum in SIGNALS
    ]
    return found


def _wal(root: Path) -> Path:
    store = WorkspaceLayout(root=root).store
    return store.with_name(store.name + "-wal")


def _cut_the_journal_tail(root: Path) -> None:
    wal = _wal(root)
    size = wal.stat().st_size
    with wal.open("r+b") as journal:
        journal.truncate(max(32, size - 3 * 4096 - 100))


def _flip_journal_bytes(root: Path) -> None:
    wal = _wal(root)
    data = bytearray(wal.read_bytes())
    for offset in range(len(data) // 2, len(data), 997):
        data[offset] ^= 0x5A
    wal.write_bytes(bytes(data))


def _remove_the_store(root: Path) -> None:
    store = WorkspaceLayout(root=root).store
    for path in store.parent.glob(store.name + "*"):
        path.unlink()


DAMAGE: dict[str, Callable[[Path], None]] = {
    "journal tail cut": _cut_the_journal_tail,
    "journal bytes flipped": _flip_journal_bytes,
    "store removed": _remove_the_store,
}
"""What a trial may do to the store of a killed run before resuming it: its write-ahead log
(where the last facts of a run killed with -9 are) cut short or with bytes flipped, or the
whole store gone."""


def _damage_scenarios() -> list[Scenario]:
    # Only a fault inside the agent needs the developer slow; after the commit it would be
    # 1.5 s waited out for nothing (twice, when the damage makes the resume do it again).
    points = [
        ("after commit", _plain(WORK), "commit.commit_created:1"),
        ("agent", _plain(SLOW_DEVELOPER), "prompt.prompt_materialized:2:0.5"),
    ]
    return [
        Scenario(
            f"{phase} @ {fact} SIGKILL, then {damage}",
            phase,
            build,
            signal.SIGKILL,
            fact=fact,
            damage=damage,
        )
        for phase, build, fact in points
        for damage in DAMAGE
    ]


SCENARIOS: tuple[Scenario, ...] = (*_fact_scenarios(), *_git_scenarios(), *_damage_scenarios())
"""The whole sweep."""

SAMPLE: tuple[str, ...] = (
    "agent @ prompt.prompt_materialized:2:0.5 SIGKILL",
    "checkpoint @ misc.checkpoint_saved:2 SIGTERM",
    "human wait @ agent.topic_published:1:0.5 SIGINT",
    "rebase after `git rebase` SIGKILL",
    "dev-fix @ dev_fix.dev_fix_triggered:1:0.5 SIGKILL",
    "after commit @ commit.commit_created:1 SIGKILL, then journal tail cut",
    "gate @ validation.gate_started:1:0.5 SIGKILL",
    "gate blocked @ validation.gate_finished:1 SIGTERM",
)
"""The scenarios ``tests/faults/test_sweep.py`` runs (a few seconds each; a kill -9 inside a
task round's gate, and SIGTERM right after a gate's failure, before the block is acted on);
the commit step's are all in ``tests/faults/test_commit_once.py``."""


@frozen
class Trial:
    """What happened in one scenario's trial."""

    name: str
    phase: str
    signal: str
    first_code: int
    resumes: int
    final_code: int
    seconds: float
    problems: tuple[str, ...]


def _ralph(root: Path, args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*RALPH, *args], cwd=root, env=env, capture_output=True, text=True, timeout=180
    )


def run_trial(scenario: Scenario, workdir: Path) -> Trial:
    """Run ``scenario`` in a fresh workspace under ``workdir`` and check the invariants."""
    started = time.monotonic()
    root = scenario.build(workdir / "ws")
    env = {**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "160"}
    faulty = dict(env)
    armed = workdir / "armed"
    if scenario.fact is not None:
        tag, k, *delay = scenario.fact.split(":")
        faulty["RALPH_FAULT_INJECT"] = ":".join([tag, k, scenario.signum.name, *delay])
    else:
        assert scenario.git_after is not None
        armed.touch()
        faulty |= {
            "PATH": install(workdir / "bin"),
            "GITFAULT_AFTER": scenario.git_after,
            "GITFAULT_ARMED": str(armed),
            "GITFAULT_SIGNAL": scenario.signum.name,
        }
    problems: list[str] = []
    first = _ralph(root, ["run"], faulty)
    if first.returncode not in _STOPPED:
        problems.append(f"the fault never stopped the run (exit {first.returncode})")
    if scenario.git_after is not None and armed.exists():
        problems.append(f"git {scenario.git_after} never ran")
    if scenario.damage is not None:
        DAMAGE[scenario.damage](root)
    _calm(root)
    code, resumes, last = first.returncode, 0, first
    while code in _STOPPED and resumes < 4:
        last = _ralph(root, ["resume"], env)
        code, resumes = last.returncode, resumes + 1
    if scenario.damage is not None and code in _DAMAGE_NAMED:
        # The damage stopped the resume: said in one message, never a step done twice.
        problems += _damage_named(root, last)
    else:
        if code != scenario.final_code:
            tail = " ".join((last.stdout + last.stderr).split())[-400:]
            problems.append(f"ended with exit {code}, not {scenario.final_code}: {tail}")
        problems += _invariants(root, env)
    return Trial(
        scenario.name,
        scenario.phase,
        scenario.signum.name,
        first.returncode,
        resumes,
        code,
        round(time.monotonic() - started, 2),
        tuple(problems),
    )


def _calm(root: Path) -> None:
    """After the faulted ``ralph``: the agents' delays and the gates' second are there for a
    fault to land inside them, and no resume is faulted, so its agents and gates go at once
    (the scripts keep every step, in order; only their ``delay_s`` goes)."""
    (root / CALM).touch()
    for script in (root / ".ralph").glob("*.toml"):
        kept = [
            line for line in script.read_text().splitlines(True) if not line.startswith("delay_s")
        ]
        script.write_text("".join(kept))


_DAMAGE_NAMED = (1, 4)
"""How a resume may refuse a damaged store: git ahead of what the log kept (1), the store
damaged or the run gone from it (4)."""


def _damage_named(root: Path, last: subprocess.CompletedProcess[str]) -> list[str]:
    """A refusal after damage: one message and no traceback, and git holds no step twice."""
    problems = []
    if "Traceback" in last.stderr or not last.stderr.strip():
        problems.append("the damage was not named: " + " ".join(last.stderr.split())[-400:])
    effects = [effect for _sha, effect in commits_in_git(root)]
    if len(effects) != len(set(effects)):
        problems.append(f"a step was committed twice: {effects}")
    return problems


def _invariants(root: Path, env: dict[str, str]) -> list[str]:
    """Every commit git holds for the run in its log once; one start, at most one end; a
    gated run's rounds went as they should (:func:`tests.faults.gated.gate_problems`);
    ``replay --verify`` (checkpoints, and the log against git) passes."""
    problems = []
    in_git = commits_in_git(root)
    effects = [effect for _sha, effect in in_git]
    if len(effects) != len(set(effects)):
        problems.append(f"a step was committed twice: {in_git}")
    in_log = commits_in_log(root)
    if len(in_log) != len(set(in_log)):
        problems.append(f"a commit is in the log twice: {in_log}")
    if sorted(in_log) != sorted(sha for sha, _effect in in_git):
        problems.append(f"git and the log disagree: git {in_git}, log {in_log}")
    events = stored_events(root)
    if sum(isinstance(e, RunStarted) for e in events) != 1:
        problems.append("the run did not start exactly once")
    if sum(isinstance(e, RunCompleted) for e in events) > 1:
        problems.append("the run completed more than once")
    problems += gate_problems(root, events)
    verified = _ralph(root, ["replay", "--verify"], env)
    if verified.returncode != 0:
        problems.append("replay --verify: " + " ".join(verified.stderr.split())[:400])
    return problems


def _report(trials: list[Trial], seconds: float) -> str:
    failed = [t for t in trials if t.problems]
    lines = [
        "# Fault-injection sweep",
        "",
        "`python -m tests.faults.sweep` (see `tests/faults/sweep.py`): each row is one `ralph run`",
        "stopped by the signal at the point named, then `ralph resume` until it ends; the run",
        "must end with its expected code, every commit git holds for it must be in its log",
        "exactly once, and `ralph replay --verify` must pass. Where the store was damaged after",
        "the fault (its journal cut or flipped, or the store removed), the resume may instead",
        "refuse in one message without a traceback (exit 1 or 4), and git must hold no step",
        "twice.",
        "",
        f"{len(trials)} trials, {len(failed)} failed, {seconds:.0f} s.",
        "",
        "| scenario | phase | first exit | resumes | final exit | s | problems |",
        "| --- | --- | ---: | ---: | ---: | ---: | --- |",
    ]
    for t in trials:
        name = t.name.replace("|", "\\|")
        problems = "; ".join(t.problems).replace("|", "\\|") or "none"
        lines.append(
            f"| {name} | {t.phase} | {t.first_code} | {t.resumes} | {t.final_code} "
            f"| {t.seconds:.1f} | {problems} |"
        )
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    """Run the sweep (or ``--sample``, or ``--only NAME...``); write the figures; exit 1 when
    a trial broke an invariant."""
    parser = argparse.ArgumentParser(prog="python -m tests.faults.sweep")
    parser.add_argument("--sample", action="store_true", help="only the test suite's sample")
    parser.add_argument("--only", action="append", help="a scenario name (repeatable)")
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks", help="where to write")
    args = parser.parse_args(argv)
    chosen = set(args.only or (SAMPLE if args.sample else ()))
    scenarios = [s for s in SCENARIOS if not chosen or s.name in chosen]
    started = time.monotonic()
    trials = []
    for scenario in scenarios:
        with tempfile.TemporaryDirectory(prefix="ralph-fault-") as work:
            trial = run_trial(scenario, Path(work))
        trials.append(trial)
        verdict = "ok" if not trial.problems else "FAILED: " + "; ".join(trial.problems)
        print(f"{trial.seconds:6.1f}s  {trial.name}: {verdict}", flush=True)
    seconds = time.monotonic() - started
    if not args.only and not args.sample:
        args.out.mkdir(parents=True, exist_ok=True)
        figures = {"seconds": round(seconds, 1), "trials": [asdict(t) for t in trials]}
        (args.out / "faults.json").write_text(json.dumps(figures, indent=1) + "\n")
        (args.out / "FAULTS.md").write_text(_report(trials, seconds))
    return 1 if any(t.problems for t in trials) else 0


if __name__ == "__main__":
    sys.exit(main())
