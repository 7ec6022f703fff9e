"""What a person or an agent waits for at the command line: ``ralph emit`` (an agent runs it
once per topic) and ``ralph task add`` as an agent runs it (once per note), ``ralph
--version``, ``respond``, ``status``, ``runs`` and ``events``, next to a bare interpreter
start (``python -c pass``), each the median of fresh processes run side by side. Goals: an
agent's calls and ``--version`` within 3x the bare start (issues 19 and 48), respond within
6x (issue 19), status, runs and events within 10x on a workspace with the demo's run (issue
48).
"""

from __future__ import annotations

import compileall
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import pipeline

_SCRIPT = Path(sys.executable).parent / "ralph"
_RALPH = (str(_SCRIPT),) if _SCRIPT.is_file() else (sys.executable, "-m", "pipeline.app.cli")
"""The ``ralph`` console script of this installation, as agents run it (``RALPH_BIN``), or
the module where the package is not installed with its script."""


def _median_s(command: list[str], cwd: Path, runs: int, env: dict[str, str] | None = None) -> float:
    """The median wall time of ``runs`` runs of ``command``, which must succeed (the ones
    that answer a question that is not there may exit 2: what is timed is the start-up)."""
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        subprocess.run(command, cwd=cwd, env=env, capture_output=True, check=False)
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def run_cli_benchmark(quick: bool, smoke: bool = False) -> dict[str, Any]:
    """Time the bare start, emit, respond and status in a workspace holding one demo run
    (``smoke``: once each, which checks the code and measures nothing worth keeping)."""
    runs = 1 if smoke else 5 if quick else 21
    # An installed wheel's modules are compiled at install; an editable checkout's are
    # compiled at first import, or never where PYTHONDONTWRITEBYTECODE is set, and then every
    # start below would time the compiler.
    compileall.compile_dir(Path(pipeline.__file__).parent, quiet=1)
    with tempfile.TemporaryDirectory() as scratch:
        base = Path(scratch)
        subprocess.run([*_RALPH, "demo", "run"], cwd=base, capture_output=True, check=True)
        root = base / "run"
        events = root / ".ralph" / "bench-events.jsonl"
        events.touch()
        (root / ".ralph" / "current-events").write_text(".ralph/bench-events.jsonl")
        bare = _median_s([sys.executable, "-c", "pass"], root, runs)
        timed = {
            "--version": _median_s([*_RALPH, "--version"], root, runs),
            "emit": _median_s([*_RALPH, "emit", "build.done", "ok"], root, runs),
            # As an agent runs it: into its run's events file (RALPH_EVENTS_FILE).
            "task add": _median_s(
                [*_RALPH, "task", "add", "Write the parser"],
                root,
                runs,
                {**os.environ, "RALPH_EVENTS_FILE": str(events)},
            ),
            # No run waits on this question: the command starts, opens the store, says so.
            "respond": _median_s([*_RALPH, "respond", "yes", "--question", "q0"], root, runs),
            "status": _median_s([*_RALPH, "status"], root, runs),
            "runs": _median_s([*_RALPH, "runs"], root, runs),
            "events": _median_s([*_RALPH, "events"], root, runs),
        }
    goals = {
        "--version": 3.0,
        "emit": 3.0,
        "task add": 3.0,
        "respond": 6.0,
        "status": 10.0,
        "runs": 10.0,
        "events": 10.0,
    }
    return {
        "runs": runs,
        "how": "the `ralph` script" if len(_RALPH) == 1 else "`python -m pipeline.app.cli`",
        "bare_ms": round(bare * 1000, 1),
        "commands": {
            name: {
                "ms": round(seconds * 1000, 1),
                "ratio": round(seconds / bare, 1),
                "goal": goals[name],
                "goal_met": seconds / bare <= goals[name],
            }
            for name, seconds in timed.items()
        },
    }


def render_cli(s: dict[str, Any]) -> list[str]:
    """The command-line section of RESULTS.md."""
    lines = [
        "## The command line",
        "",
        f"Fresh processes of {s.get('how', 'the command')} in a workspace holding one demo run,",
        f"medians of {s['runs']} runs each, next to a bare `python -c pass` ({s['bare_ms']} ms).",
        "",
        "| command | ms | x bare start | goal | met |",
        "| --- | ---: | ---: | ---: | --- |",
    ]
    for name, c in s["commands"].items():
        met = "yes" if c["goal_met"] else "no"
        lines.append(f"| `ralph {name}` | {c['ms']} | {c['ratio']} | {c['goal']}x | {met} |")
    return [*lines, ""]
