"""The sandbox package's error (pure: a definition only)."""

from __future__ import annotations

from pipeline import PipelineError

__all__ = ["SandboxError"]


class SandboxError(PipelineError, ValueError):
    """A sandbox setting or input that cannot be honoured (names the offending value)."""
