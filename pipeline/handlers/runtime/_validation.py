"""The final check: the repository's own validation program, run like an agent (I/O:
processes)."""

from __future__ import annotations

import os
import secrets
from collections.abc import Callable, Mapping, Sequence

from pipeline.events import FinalValidationFailed, FinalValidationPassed, Instant
from pipeline.handlers.agents import ProcessSpec
from pipeline.handlers.runtime._io import Facts
from pipeline.handlers.runtime._layout import WorkspaceLayout
from pipeline.handlers.runtime._run_setup import without_ralph_credentials
from pipeline.handlers.runtime._sandboxing import run_in
from pipeline.handlers.runtime._tail import cap_log, output_tail
from pipeline.handlers.sandbox import AgentNeeds, Sandbox

__all__ = ["validate"]


def validate(
    argv: Sequence[str],
    layout: WorkspaceLayout,
    run_id: str,
    environment: Mapping[str, str] | None,
    grace_s: float,
    clock: Callable[[], Instant],
    sandbox: Sandbox | None = None,
) -> Facts:
    """Run ``argv`` (none: nothing to check) in the workspace (in ``sandbox``, as agents
    run); passed, or failed with why and the tail of its output."""
    if not argv:
        return (FinalValidationPassed(at=clock()),)
    log = layout.agent_log(run_id, f"validate-{secrets.token_hex(2)}")
    log.parent.mkdir(parents=True, exist_ok=True)
    spec = ProcessSpec(
        argv=tuple(argv),
        cwd=layout.root,
        # the check runs code the agents wrote: it gets no more than they do
        env=without_ralph_credentials(os.environ if environment is None else environment),
        output_path=log,
        grace_s=grace_s,
        group_file=layout.agent_group,
    )
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
