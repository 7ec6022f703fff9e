"""``ralph doctor``'s gate checks: each ``[[gates]]`` program found or missing, and a gate at
a boundary the configuration never reaches (I/O: reads PATH and the disk).

A missing gate program fails, as it refuses ``ralph run``. A ``completion`` gate with
``loop.completion_promise = ""`` warns: no completion is ever claimed, so that boundary never
applies (the gate runs at ``final`` only, or never).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from pipeline.app.workspace._doctor_check import Check, fail, ok, warn
from pipeline.app.workspace._programs import missing_programs
from pipeline.core.config import GateConfig, RalphConfig

__all__ = ["check_gates"]


def _what(gate: GateConfig) -> str:
    return f"at {', '.join(gate.on)}, on failure {gate.on_failure.value}"


def _never_claimed(index: int, gate: GateConfig, config: RalphConfig) -> list[Check]:
    """The warning for a ``completion`` gate of a configuration that claims no completion."""
    if "completion" not in gate.on or config.loop.completion_promise:
        return []
    when = "it runs at final only" if "final" in gate.on else "it never runs"
    detail = f"gates.{index}.on: completion never applies (loop.completion_promise is off): "
    fix = 'use on = ["final"], or set loop.completion_promise in ralph.toml'
    return [warn(f"gate {gate.name}", detail + when, fix)]


def check_gates(root: Path, config: RalphConfig, environ: Mapping[str, str]) -> list[Check]:
    """One check per gate: its program found (OK) or not (FAIL: a run refuses to start), and a
    warning when it waits for a completion claim that cannot come."""
    missing = missing_programs(config, root, environ)
    checks: list[Check] = []
    for index, gate in enumerate(config.gates):
        name = f"gate {gate.name}"
        key = f"gates.{index}.argv"
        problem = next((line for line in missing if line.startswith(f"{key}:")), None)
        program = gate.argv[0] if gate.argv else ""
        if problem is not None:
            fix = f"install {program} or correct {key} in ralph.toml"
            checks.append(fail(name, problem, fix))
        else:
            checks.append(ok(name, f"program {program!r} found; {_what(gate)}"))
        checks += _never_claimed(index, gate, config)
    return checks
