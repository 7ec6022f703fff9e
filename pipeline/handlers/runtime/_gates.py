"""Running a gate: its command in the workspace, in its own process group, within its
timeouts, as an agent is run (I/O: processes).

Its start is recorded before its process starts (a crash leaves a trace, and the resume runs it
again), then how it ended: the status, the exit code, the time, the digest of its output, where
the output is (its log, capped: ``_tail.cap_log``), and the end of it for the agent. A gate
gets the environment an agent gets less ralph's credentials, plus its own ``env``, and no
events file: it reports only by its exit status.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path

import attrs

from pipeline.core.effects import RunGate
from pipeline.events import (
    Digest,
    DurationMs,
    ExitCode,
    GateFinished,
    GateStarted,
    GateStatus,
    Instant,
)
from pipeline.handlers.agents import ProcessResult, ProcessSpec, not_started
from pipeline.handlers.runtime._gitcmd import GitError
from pipeline.handlers.runtime._io import Facts
from pipeline.handlers.runtime._layout import WorkspaceLayout
from pipeline.handlers.runtime._pinned import PinnedWorld, Pinning
from pipeline.handlers.runtime._run_setup import without_ralph_credentials
from pipeline.handlers.runtime._sandboxing import run_in
from pipeline.handlers.runtime._tail import cap_log, output_tail
from pipeline.handlers.sandbox import AgentNeeds, Sandbox

__all__ = ["NO_INACTIVITY_LIMIT", "command_status", "command_tail", "run_gate"]

NO_INACTIVITY_LIMIT = 1_000_000_000.0
"""A test suite (or a hook) may be silent for long: without ``inactivity_timeout_s`` only the
total timeout applies."""


def run_gate(
    effect: RunGate,
    layout: WorkspaceLayout,
    run_id: str,
    environment: Mapping[str, str] | None,
    gate_env: Mapping[str, str],
    grace_s: float,
    clock: Callable[[], Instant],
    sandbox: Sandbox | None = None,
    pinning: Pinning | None = None,
) -> Iterator[Facts]:
    """Run ``effect``'s gate (in ``sandbox``, as agents run): its start, then how it
    ended. With ``effect.pin_base`` and ``pinning``, in the pinned worlds (the person's, then,
    when the agent added test files and the first passed, the agent's: see
    :mod:`._pinned`)."""
    yield (GateStarted(gate=effect.gate, boundary=effect.boundary, at=clock()),)
    log = layout.agent_log(run_id, f"gate-{effect.gate}-{effect.effect_id.rsplit(':', 1)[-1]}")
    log.parent.mkdir(parents=True, exist_ok=True)
    base = without_ralph_credentials(os.environ if environment is None else environment)
    env = {
        **base,
        **gate_env,
        "RALPH_RUN_ID": run_id,
        "RALPH_GATE": effect.gate,
        "RALPH_GATE_BOUNDARY": effect.boundary.value,
        # A gate reports by its exit status only: `ralph emit` refuses a non-regular file.
        "RALPH_EVENTS_FILE": os.devnull,
    }
    inactivity = effect.inactivity_timeout_s
    spec = ProcessSpec(
        argv=effect.argv,
        cwd=layout.root,
        env=env,
        output_path=log,
        total_timeout_s=float(effect.timeout_s),
        inactivity_timeout_s=NO_INACTIVITY_LIMIT if inactivity is None else float(inactivity),
        grace_s=grace_s,
        group_file=layout.agent_group,
    )
    # Only what the person wrote for the gate passes the sandbox's filter beside its own set.
    needs = AgentNeeds(set_env=gate_env)
    world = None
    if effect.pin_base is not None and pinning is not None:
        try:
            world = pinning.world.lay_out(effect.pin_base, effect.test_paths, (effect.argv,))
            result, log = _run_pinned(world, pinning, spec, needs) if world else (None, log)
        except (GitError, OSError) as error:
            why = f"cannot lay out the gate's pinned world: {error}"
            result = not_started(why)
    else:
        result = None
    if result is None:
        result, _ = run_in(sandbox, spec, needs)
    pinned = None if world is None else world.base
    cap_log(log)
    yield (
        GateFinished(
            gate=effect.gate,
            boundary=effect.boundary,
            argv=effect.argv,
            status=command_status(result),
            exit_code=None if result.exit_code is None else ExitCode(result.exit_code),
            duration_ms=DurationMs(result.duration_ms),
            output_digest=Digest(result.output_digest),
            log_path=layout.relative(log),
            tail=command_tail(result, log),
            pinned=pinned,
            restored=() if world is None else world.restored,
            at=clock(),
        ),
    )


def _run_pinned(
    world: PinnedWorld, pinning: Pinning, spec: ProcessSpec, needs: AgentNeeds
) -> tuple[ProcessResult, Path]:
    """Run ``spec`` in the person's world, then, when it passed and the agent added test
    files, in the agent's: the result that decides (a failure, or the last pass), the time
    of both, and its log."""
    total = 0
    result: ProcessResult | None = None
    log = spec.output_path
    for number, tree in enumerate(t for t in (world.person, world.agent) if t is not None):
        scratch = pinning.world.show(world, tree)
        if number:
            log = spec.output_path.with_name(f"{spec.output_path.stem}-added.log")
        here = attrs.evolve(spec, cwd=scratch, output_path=log)
        result, _ = run_in(pinning.sandbox_in(scratch), here, pinning.needs(needs))
        total += result.duration_ms
        if command_status(result) is not GateStatus.PASSED:
            break
    assert result is not None, "the person's world always runs"
    return attrs.evolve(result, duration_ms=total), log


def command_status(result: ProcessResult) -> GateStatus:
    """How a command ralph ran itself (a gate, a hook) ended."""
    if result.timed_out is not None:
        return GateStatus.TIMED_OUT
    if result.exit_code is None:
        return GateStatus.NOT_STARTED
    return GateStatus.PASSED if result.exit_code == 0 else GateStatus.FAILED


def command_tail(result: ProcessResult, log: Path) -> str:
    """The end of its output (kept in ``log``), or why it could not start."""
    if result.exit_code is None and result.timed_out is None:
        return result.start_error or "the program could not be started"
    return output_tail(log)
