"""Running ralph's own checks, gates, lifecycle hooks and the final validation: each command in
the workspace, in its own process group, within its timeouts, as an agent is run (I/O:
processes).

A gate's start is recorded before its process starts (a crash leaves a trace, and the resume
runs it again), then how it ended: the status, the exit code, the time, the digest of its
output, where the output is (its log, capped: ``_tail.cap_log``), and the end of it for the
agent. A check gets the environment an agent gets less ralph's credentials, plus its own
``env``, and no events file: it reports only by its exit status. A hook is given what is going
on as JSON on its standard input; its whole output is kept beside the agents' logs, and the
fact keeps its end. The final validation (the repository's ``validate`` program) passes or
fails with why and the end of its output.
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path

import attrs

from pipeline.core.effects import RunGate, RunHook
from pipeline.events import (
    Digest,
    DurationMs,
    ExitCode,
    FinalValidationFailed,
    FinalValidationPassed,
    GateFinished,
    GateStarted,
    GateStatus,
    HookRan,
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

__all__ = [
    "NO_INACTIVITY_LIMIT",
    "check_spec",
    "command_status",
    "command_tail",
    "run_check",
    "run_gate",
    "run_hook",
    "validate",
]

NO_INACTIVITY_LIMIT = 1_000_000_000.0
"""A test suite (or a hook) may be silent for long: without ``inactivity_timeout_s`` only the
total timeout applies."""


def check_spec(
    layout: WorkspaceLayout,
    run_id: str,
    log_name: str,
    argv: tuple[str, ...],
    env: Mapping[str, str],
    *,
    total_s: float,
    inactivity_s: float | None,
    grace_s: float,
    cwd: Path | None = None,
    stdin: bytes | None = None,
) -> ProcessSpec:
    """How ralph runs a check of its own (a gate, a hook, a collection, the final validation):
    ``argv`` in the workspace (or ``cwd``) with this process's environment less ralph's
    credentials, plus ``env`` and the run's id, and no events file (a check reports by its
    exit status only: `ralph emit` refuses a non-regular file); its output in the run's log
    ``log_name``; no inactivity limit unless ``inactivity_s``."""
    log = layout.agent_log(run_id, log_name)
    log.parent.mkdir(parents=True, exist_ok=True)
    base = without_ralph_credentials(os.environ)
    return ProcessSpec(
        argv=argv,
        cwd=layout.root if cwd is None else cwd,
        env={**base, **env, "RALPH_RUN_ID": run_id, "RALPH_EVENTS_FILE": os.devnull},
        output_path=log,
        stdin=stdin,
        total_timeout_s=float(total_s),
        inactivity_timeout_s=NO_INACTIVITY_LIMIT if inactivity_s is None else float(inactivity_s),
        grace_s=grace_s,
        group_file=layout.agent_group,
    )


def run_gate(
    effect: RunGate,
    layout: WorkspaceLayout,
    run_id: str,
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
    name = f"gate-{effect.gate}-{effect.effect_id.rsplit(':', 1)[-1]}"
    env = {**gate_env, "RALPH_GATE": effect.gate, "RALPH_GATE_BOUNDARY": effect.boundary.value}
    spec = check_spec(
        layout,
        run_id,
        name,
        effect.argv,
        env,
        total_s=effect.timeout_s,
        inactivity_s=effect.inactivity_timeout_s,
        grace_s=grace_s,
    )
    # Only what the person wrote for the gate passes the sandbox's filter beside its own set.
    needs = AgentNeeds(set_env=gate_env)
    pinned = (effect.pin_base, effect.test_paths, pinning)
    result, log, world = run_check(spec, needs, sandbox, *pinned, at_once=False)
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
            pinned=None if world is None else world.base,
            restored=() if world is None else world.restored,
            at=clock(),
        ),
    )


def run_hook(
    effect: RunHook,
    layout: WorkspaceLayout,
    run_id: str,
    grace_s: float,
    clock: Callable[[], Instant],
    sandbox: Sandbox | None = None,
    pinning: Pinning | None = None,
) -> tuple[HookRan]:
    """Run ``effect``'s hook and report how it ended. A blocking hook of a run that pins its
    gates runs as they do, in ``pinning``'s scratch world (its command's files, the tests and
    their configuration as the base has them)."""
    hook = effect.hook
    spec = check_spec(
        layout,
        run_id,
        f"hook-{hook.point.value}-{hook.name}-{effect.sequence}",
        hook.argv,
        {"RALPH_HOOK": hook.name, "RALPH_HOOK_POINT": hook.point.value},
        total_s=hook.timeout_s,
        inactivity_s=None,
        grace_s=grace_s,
        stdin=effect.input.text.encode() + b"\n",
    )
    pinned = (effect.pin_base, effect.test_paths, pinning)
    result, log, _ = run_check(spec, AgentNeeds(), sandbox, *pinned, at_once=True)
    cap_log(log)
    return (
        HookRan(
            hook=hook.name,
            point=hook.point,
            argv=hook.argv,
            status=command_status(result),
            exit_code=None if result.exit_code is None else ExitCode(result.exit_code),
            duration_ms=DurationMs(result.duration_ms),
            tail=command_tail(result, log),
            at=clock(),
        ),
    )


def run_check(
    spec: ProcessSpec,
    needs: AgentNeeds,
    sandbox: Sandbox | None,
    pin_base: str | None,
    test_paths: tuple[str, ...],
    pinning: Pinning | None,
    *,
    at_once: bool,
) -> tuple[ProcessResult, Path, PinnedWorld | None]:
    """Run the check ``spec`` in ``sandbox``; or, with ``pin_base`` and ``pinning``, in the
    worlds pinned to that commit (as is when there is no commit to pin to yet): with
    ``at_once``, in the one holding the agent's added tests too (a hook checks the work about
    to be committed, all of it), else in the person's, then, when it passed and the agent
    added test files, in the agent's (a gate). The result that decides, its log, and the
    worlds laid out (None: not pinned)."""
    world = None
    if pin_base is not None and pinning is not None:
        try:
            world = pinning.world.lay_out(pin_base, test_paths, (spec.argv,))
            if world is not None:
                both = (world.person, world.agent)
                trees = (world.agent or world.person,) if at_once else tuple(filter(None, both))
                return (*_run_pinned(world, trees, pinning, spec, needs), world)
        except (GitError, OSError) as error:
            why = f"cannot lay out the check's pinned world: {error}"
            return not_started(why), spec.output_path, world
    return run_in(sandbox, spec, needs)[0], spec.output_path, None


def _run_pinned(
    world: PinnedWorld,
    trees: tuple[str, ...],
    pinning: Pinning,
    spec: ProcessSpec,
    needs: AgentNeeds,
) -> tuple[ProcessResult, Path]:
    """Run ``spec`` in each of ``world``'s ``trees`` while it passes: the result that
    decides (a failure, or the last pass), the time of all, and its log."""
    total = 0
    result: ProcessResult | None = None
    log = spec.output_path
    for number, tree in enumerate(trees):
        scratch = pinning.world.show(world, tree)
        if number:
            log = spec.output_path.with_name(f"{spec.output_path.stem}-added.log")
        here = attrs.evolve(spec, cwd=scratch, output_path=log)
        result, _ = run_in(pinning.sandbox_in(scratch), here, pinning.needs(needs))
        total += result.duration_ms
        if command_status(result) is not GateStatus.PASSED:
            break
    assert result is not None, "a pinned world has a tree"
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


def validate(
    argv: Sequence[str],
    layout: WorkspaceLayout,
    run_id: str,
    grace_s: float,
    clock: Callable[[], Instant],
    sandbox: Sandbox | None = None,
) -> Facts:
    """Run ``argv`` (none: nothing to check) in the workspace (in ``sandbox``, as agents
    run); passed, or failed with why and the tail of its output."""
    if not argv:
        return (FinalValidationPassed(at=clock()),)
    # The check runs code the agents wrote: it gets no more than they do (:func:`check_spec`).
    spec = check_spec(
        layout,
        run_id,
        f"validate-{secrets.token_hex(2)}",
        tuple(argv),
        {},
        # It has no timeouts of its own in ralph.toml: an agent's defaults.
        total_s=3_600.0,
        inactivity_s=600.0,
        grace_s=grace_s,
    )
    log = spec.output_path
    result, _ = run_in(sandbox, spec, AgentNeeds())
    cap_log(log)
    if result.exit_code == 0:
        return (FinalValidationPassed(at=clock()),)
    if result.exit_code is None:
        why = result.start_error or "could not start"
    elif result.timed_out is not None:
        why = f"timed out ({result.timed_out.value})"
    else:
        why = f"exited with status {result.exit_code}"
    tail = output_tail(log)
    where = f" (its whole output: {layout.relative(log)})"
    reason = f"`{' '.join(argv)}` {why}{where}" + (f"; it ends:\n{tail}" if tail else "")
    return (FinalValidationFailed(reason=reason, at=clock()),)
