"""What the engine asks of the world beside the effects (impure: answering does I/O).

Three questions come up in a run that no effect carries: on a resume, what is the world the
run goes on in (the runtime's sandbox, checked again); before a prompt is made, what reached
the run from outside meanwhile (a person's guidance); and the lifecycle hooks the
orchestration finds due. A :class:`RunWorld` answers them with facts, which the engine masks,
stores and folds like any handler's.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from pipeline import PipelineError
from pipeline.core.effects import Effect
from pipeline.core.state import PipelineState
from pipeline.events import HookSpec, PipelineEvent

__all__ = ["RunWorld"]


class RunWorld(Protocol):
    """Answers the engine's questions to the world. By default there is nothing to say on a
    resume or before a prompt, and no hook can run: subclass and override what you answer."""

    def resumed(self) -> Sequence[PipelineEvent]:
        """The facts of the world a resumed run goes on in, recorded right after
        ``RunResumed``."""
        return ()

    def news(self, state: PipelineState, /) -> Sequence[PipelineEvent]:
        """What reached the run from outside since ``state`` (a person's guidance), recorded
        before the next prompt is made, so that the prompt holds it."""
        return ()

    def hook(
        self, hook: HookSpec, state: PipelineState, effect: Effect | None, /
    ) -> Sequence[PipelineEvent]:
        """Run lifecycle ``hook``, due before ``effect`` (None: once the run has ended), and
        report what happened (``HookRan``)."""
        raise PipelineError(f"hook {hook.name!r} is due and this world runs no hooks")
