"""``[[gates]]``: the commands ralph runs at final validation, which a completion must pass
(pure). See ``docs/architecture/gates.md``."""

from __future__ import annotations

import re
from typing import Final, final

from attrs import field, frozen

from pipeline.events import Count, GateAction, GateBoundary, GateSpec

__all__ = ["GateConfig", "check_gates"]

_NAME: Final = re.compile(r"[A-Za-z0-9_-]{1,64}")
_BOUNDARIES: Final = {b.value for b in GateBoundary}
_ACTIONS: Final = {a.value for a in GateAction}


@final
@frozen(kw_only=True)
class GateConfig:
    """``[[gates]]``: one gate."""

    name: str
    argv: tuple[str, ...]
    """The command, as an argv (never a shell string; ``["sh", "-c", "..."]`` on purpose)."""
    timeout_s: int = 600
    inactivity_timeout_s: int | None = None
    """How long its output may stay silent (None: no limit, only ``timeout_s``)."""
    on: tuple[str, ...] = ("final",)
    """``final``: at every final validation; ``completion``: when an accepted completion
    takes the run there; ``iteration``: after each developer task that did work, before its
    commit; ``commit``: as ``iteration``, only where a commit follows."""
    on_failure: str = "block"
    """``block``: the agent is told and works on; ``warn``: told only; ``stop``: the run ends."""
    env: dict[str, str] = field(factory=dict)
    """Added to the gate's environment (not recorded in the log: it may hold secrets)."""

    def spec(self) -> GateSpec:
        """The gate as the run records it (a checked configuration's only)."""
        timeout = self.inactivity_timeout_s
        return GateSpec(
            name=self.name,
            argv=self.argv,
            timeout_s=Count(self.timeout_s),
            inactivity_timeout_s=None if timeout is None else Count(timeout),
            on=tuple(GateBoundary(b) for b in self.on),
            on_failure=GateAction(self.on_failure),
        )


def check_gates(gates: tuple[GateConfig, ...], commits: bool = True) -> list[str]:
    """Every problem with ``[[gates]]``, one line each, naming the gate's key. ``commits``
    False (a read-only workflow) refuses ``commit``: such a gate would never run."""
    problems: list[str] = []
    seen: set[str] = set()
    for index, gate in enumerate(gates):
        key = f"gates.{index}"
        if not _NAME.fullmatch(gate.name):
            problems.append(f"{key}.name: {gate.name!r} must be 1 to 64 letters, digits, _ and -")
        elif gate.name in seen:
            problems.append(f"{key}.name: {gate.name!r} is given twice")
        seen.add(gate.name)
        if not gate.argv or not gate.argv[0].strip():
            problems.append(f"{key}.argv: must name a program")
        if not gate.on:
            problems.append(f"{key}.on: empty; give final, completion, iteration or commit")
        for boundary in gate.on:
            if boundary not in _BOUNDARIES:
                problems.append(
                    f"{key}.on: {boundary!r} is not one of final, completion, iteration, commit"
                )
        if "commit" in gate.on and not commits:
            problems.append(
                f"{key}.on: commit never runs in a workflow with [loop] commits = false "
                "(use iteration)"
            )
        if len(set(gate.on)) != len(gate.on):
            problems.append(f"{key}.on: names a boundary twice")
        if gate.on_failure not in _ACTIONS:
            problems.append(f"{key}.on_failure: {gate.on_failure!r} is not block, warn or stop")
    return problems
