"""Running a lifecycle hook: its command in the workspace, as a gate is run (in the agents'
sandbox when there is one, in its own process group, within its timeout), with what is going
on as JSON on its standard input (I/O: processes).

A hook reports by its exit status only (``RALPH_EVENTS_FILE`` is ``/dev/null`` for it). Its
whole output is kept beside the agents' logs; the fact keeps its end.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping

import attrs

from pipeline.core.effects import RunHook
from pipeline.events import DurationMs, ExitCode, HookRan, Instant
from pipeline.handlers.agents import ProcessResult, ProcessSpec, not_started
from pipeline.handlers.runtime._gates import NO_INACTIVITY_LIMIT, command_status, command_tail
from pipeline.handlers.runtime._gitcmd import GitError
from pipeline.handlers.runtime._layout import WorkspaceLayout
from pipeline.handlers.runtime._pinned import Pinning
from pipeline.handlers.runtime._run_setup import without_ralph_credentials
from pipeline.handlers.runtime._sandboxing import run_in
from pipeline.handlers.runtime._tail import cap_log
from pipeline.handlers.sandbox import AgentNeeds, Sandbox

__all__ = ["run_hook"]


def run_hook(
    effect: RunHook,
    run_id: str,
    layout: WorkspaceLayout,
    environment: Mapping[str, str] | None,
    grace_s: float,
    clock: Callable[[], Instant],
    sandbox: Sandbox | None = None,
    pinning: Pinning | None = None,
) -> tuple[HookRan]:
    """Run ``effect``'s hook and report how it ended. A blocking hook of a run that pins its
    gates runs as they do, in ``pinning``'s scratch world (its command's files, the tests and
    their configuration as the base has them)."""
    hook = effect.hook
    log = layout.agent_log(run_id, f"hook-{hook.point.value}-{hook.name}-{effect.sequence}")
    log.parent.mkdir(parents=True, exist_ok=True)
    env = {
        **without_ralph_credentials(os.environ if environment is None else environment),
        "RALPH_RUN_ID": run_id,
        "RALPH_HOOK": hook.name,
        "RALPH_HOOK_POINT": hook.point.value,
        "RALPH_EVENTS_FILE": os.devnull,
    }
    spec = ProcessSpec(
        argv=hook.argv,
        cwd=layout.root,
        env=env,
        output_path=log,
        stdin=effect.input.text.encode() + b"\n",
        total_timeout_s=float(hook.timeout_s),
        inactivity_timeout_s=NO_INACTIVITY_LIMIT,
        grace_s=grace_s,
        group_file=layout.agent_group,
    )
    if effect.pin_base is None or pinning is None:
        result, _ = run_in(sandbox, spec, AgentNeeds())
    else:
        result = _run_pinned_hook(pinning, effect.pin_base, effect.test_paths, spec, sandbox)
    cap_log(log)
    tail = command_tail(result, log)
    exit_code = None if result.exit_code is None else ExitCode(result.exit_code)
    duration = DurationMs(result.duration_ms)
    return (
        HookRan(
            hook=hook.name,
            point=hook.point,
            argv=hook.argv,
            status=command_status(result),
            exit_code=exit_code,
            duration_ms=duration,
            tail=tail,
            at=clock(),
        ),
    )


def _run_pinned_hook(
    pinning: Pinning,
    base: str,
    test_paths: tuple[str, ...],
    spec: ProcessSpec,
    sandbox: Sandbox | None,
) -> ProcessResult:
    """Run ``spec`` in the scratch world pinned to ``base``, the agent's new tests in it (a
    hook checks the work about to be committed, all of it); as is when there is no commit to
    pin to yet."""
    try:
        world = pinning.world.lay_out(base, test_paths, (spec.argv,))
        if world is None:
            return run_in(sandbox, spec, AgentNeeds())[0]
        scratch = pinning.world.show(world, world.agent or world.person)
    except (GitError, OSError) as error:
        why = f"cannot lay out the hook's pinned world: {error}"
        return not_started(why)
    here = attrs.evolve(spec, cwd=scratch)
    return run_in(pinning.sandbox_in(scratch), here, pinning.needs(AgentNeeds()))[0]
