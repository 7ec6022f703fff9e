"""The error root of ralph-pipeline (pure: definitions only).

Every exception the library raises on purpose derives from :class:`PipelineError` and from the
builtin it resembles, so callers can catch either.
"""

from __future__ import annotations

__all__ = ["PipelineError", "SnapshotMismatchError", "WireFormatError"]


class PipelineError(Exception):
    """Root of every error ralph-pipeline raises on purpose."""


class WireFormatError(PipelineError, ValueError):
    """Stored or received data does not match the wire contract (names the offending part)."""


class SnapshotMismatchError(PipelineError, AssertionError):
    """A frozen union or its fields differ from the recorded snapshot."""
