"""Reducer for prompt facts (pure)."""

from __future__ import annotations

from typing import assert_never

from attrs import evolve

from pipeline.core.state import (
    Phase,
    PipelineState,
    ProtectedPrompt,
    Step,
    agents_for,
    notices_for,
    task_prompt_kind,
    working_hat,
)
from pipeline.events import (
    PromptFileProtected,
    PromptInputEvent,
    PromptKind,
    PromptMaterialized,
)
from pipeline.reducers._build import advance, anomaly
from pipeline.reducers._transitions import chain_exhausted

__all__ = ["reduce_prompt"]


def reduce_prompt(state: PipelineState, event: PromptInputEvent) -> PipelineState:
    """Fold one prompt fact into ``state``: the awaited prompt lets the agent be invoked."""
    progress = state.progress
    match event:
        case PromptMaterialized():
            expected = task_prompt_kind(state)
            if progress.step is not Step.PROMPT or event.kind is not expected:
                return anomaly(state, event, f"no {event.kind.value} prompt was asked for")
            role = progress.role
            assert role is not None
            assert state.run is not None
            # A role configured with no agent (or none left) cannot be invoked at all.
            if state.agent.chain_position >= len(agents_for(state, role)):
                return chain_exhausted(state, role)
            invoke = evolve(progress, step=Step.INVOKE)
            i = state.intake
            # The prompt carried the malformed-line feedback and the role's notices: delivered;
            # notices for other hats stay owed to their next prompts.
            if event.kind is PromptKind.FORMAT_CORRECTION:
                # A correction shows only the malformed response: what is owed stays owed.
                return advance(state, progress=invoke)
            working = working_hat(state, role)
            hat = None if working is None else working.name
            carried = notices_for(i.notices, role, hat) if i.notices else ()
            if not i.feedback and not i.feedback_omitted and not carried:
                return advance(state, progress=invoke)
            owed = tuple(n for n in i.notices if n not in carried) if carried else i.notices
            delivered = evolve(i, feedback=(), feedback_omitted=0, notices=owed)
            return advance(state, progress=invoke, intake=delivered)
        case PromptFileProtected():
            if progress.phase is Phase.NOT_STARTED:
                return anomaly(state, event, "the run has not started")
            protected = ProtectedPrompt(path=event.path, original_mode=event.original_mode)
            return advance(state, ledger=evolve(state.ledger, protected_prompt=protected))
        case _:
            assert_never(event)
