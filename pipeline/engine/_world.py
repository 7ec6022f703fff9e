"""What the engine asks of the world beside the effects (impure: answering does I/O).

Two questions come up in a run that no effect carries yet: on a resume, what is the world the
run goes on in (the runtime's sandbox, checked again); and before a prompt is made, what
reached the run from outside meanwhile (a person's guidance). A :class:`RunWorld` answers them
with facts, which the engine masks, stores and folds like any handler's. (Lifecycle hooks are
effects: ``next_effect`` asks for a ``RunHook`` and the handler runs it.)
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from pipeline.core.state import PipelineState
from pipeline.events import PipelineEvent

__all__ = ["RunWorld"]


class RunWorld(Protocol):
    """Answers the engine's questions to the world. By default there is nothing to say on a
    resume or before a prompt: subclass and override what you answer."""

    def resumed(self) -> Sequence[PipelineEvent]:
        """The facts of the world a resumed run goes on in, recorded right after
        ``RunResumed``."""
        return ()

    def news(self, state: PipelineState, /) -> Sequence[PipelineEvent]:
        """What reached the run from outside since ``state`` (a person's guidance), recorded
        before the next prompt is made, so that the prompt holds it."""
        return ()
