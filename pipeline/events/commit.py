"""Commit and rebase facts (pure data)."""

from __future__ import annotations

from typing import TypeAlias, final

from attrs import field, frozen

from pipeline.events.values import INSTANT_VALIDATOR, Instant

__all__ = [
    "CommitCreated",
    "CommitEvent",
    "CommitMessageGenerated",
    "CommitSkipped",
    "GitMetadataRestored",
    "RebaseAborted",
    "RebaseConflicted",
    "RebaseEvent",
    "RebaseStarted",
    "RebaseSucceeded",
]


@final
@frozen(kw_only=True)
class CommitMessageGenerated:
    """The committer produced ``message`` for the pending changes."""

    message: str
    at: Instant = field(validator=INSTANT_VALIDATOR)


@final
@frozen(kw_only=True)
class CommitCreated:
    """A commit ``sha`` was created on ``branch``."""

    sha: str
    branch: str
    at: Instant = field(validator=INSTANT_VALIDATOR)


@final
@frozen(kw_only=True)
class CommitSkipped:
    """No commit was made (``reason``: usually that nothing changed)."""

    reason: str
    at: Instant = field(validator=INSTANT_VALIDATOR)


@final
@frozen(kw_only=True)
class GitMetadataRestored:
    """Files of the repository's git configuration, hooks or ``info/``, or of the agent CLIs'
    project settings (``paths``, relative to the workspace where they lie in it), differed from
    how the run found them, and were put back; or a repository's ``.git`` an agent made below
    the work tree's top, or a protected path (``[sandbox] protect`` and the built-in ones) it
    created in the sandbox, was removed: anything there can make ralph's own git commands,
    the next invocation or the person's own tools run code."""

    paths: tuple[str, ...]
    at: Instant = field(validator=INSTANT_VALIDATOR)


CommitEvent: TypeAlias = (
    CommitMessageGenerated | CommitCreated | CommitSkipped | GitMetadataRestored
)
"""Facts about commits."""


@final
@frozen(kw_only=True)
class RebaseStarted:
    """A rebase onto ``onto`` began."""

    onto: str
    at: Instant = field(validator=INSTANT_VALIDATOR)


@final
@frozen(kw_only=True)
class RebaseSucceeded:
    """The rebase finished; the branch head is now ``head``."""

    head: str
    at: Instant = field(validator=INSTANT_VALIDATOR)


@final
@frozen(kw_only=True)
class RebaseConflicted:
    """The rebase stopped on conflicts in ``paths``."""

    paths: tuple[str, ...]
    at: Instant = field(validator=INSTANT_VALIDATOR)


@final
@frozen(kw_only=True)
class RebaseAborted:
    """The rebase was aborted; the branch is as it was before it."""

    at: Instant = field(validator=INSTANT_VALIDATOR)


RebaseEvent: TypeAlias = RebaseStarted | RebaseSucceeded | RebaseConflicted | RebaseAborted
"""Facts about rebases."""
