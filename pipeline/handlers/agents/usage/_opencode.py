"""Usage from opencode's output (pure). NOT YET WRITTEN: a skeleton that finds nothing."""

from __future__ import annotations

from collections.abc import Iterable

from pipeline.handlers.agents.usage._figures import UsageFigures

__all__ = ["parse_opencode"]


def parse_opencode(lines: Iterable[bytes]) -> UsageFigures:
    """The usage opencode's output reports (every field None when it says nothing)."""
    for _ in lines:
        pass
    return UsageFigures()
