"""Prompt input facts: a prompt was rendered to a file (pure data)."""

from __future__ import annotations

from typing import TypeAlias, final

from attrs import field, frozen

from pipeline.events.values import INSTANT_VALIDATOR, Digest, Instant, PromptKind

__all__ = ["PromptInputEvent", "PromptMaterialized"]


@final
@frozen
class PromptMaterialized:
    """A prompt of ``kind`` was written to ``path`` (relative to the workspace) with this digest."""

    kind: PromptKind
    path: str
    content_digest: Digest
    at: Instant = field(validator=INSTANT_VALIDATOR)


PromptInputEvent: TypeAlias = PromptMaterialized
"""Facts about the prompts handed to agents."""
