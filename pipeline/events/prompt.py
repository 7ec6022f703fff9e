"""Prompt input facts: a prompt was rendered to a file; the user's prompt file was protected
(pure data)."""

from __future__ import annotations

from typing import TypeAlias, final

from attrs import field, frozen

from pipeline.events.values import (
    FILE_MODE_VALIDATOR,
    INSTANT_VALIDATOR,
    Count,
    Digest,
    Instant,
    PromptKind,
)

__all__ = ["PromptFileProtected", "PromptInputEvent", "PromptMaterialized"]


@final
@frozen(kw_only=True)
class PromptMaterialized:
    """A prompt of ``kind`` was written to ``path`` (relative to the workspace) with this digest."""

    kind: PromptKind
    path: str
    content_digest: Digest
    at: Instant = field(validator=INSTANT_VALIDATOR)


@final
@frozen(kw_only=True)
class PromptFileProtected:
    """The user's prompt file at ``path`` was made read-only; ``original_mode`` is restored at
    finalization (its permission bits, as ``stat`` gives them)."""

    path: str
    original_mode: Count = field(validator=FILE_MODE_VALIDATOR)
    at: Instant = field(validator=INSTANT_VALIDATOR)


PromptInputEvent: TypeAlias = PromptMaterialized | PromptFileProtected
"""Facts about the prompts handed to agents and the user's prompt file."""
