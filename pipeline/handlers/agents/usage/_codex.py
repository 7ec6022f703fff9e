"""Usage from codex's output (pure). NOT YET WRITTEN: a skeleton that finds nothing."""

from __future__ import annotations

from collections.abc import Iterable

from pipeline.handlers.agents.usage._figures import UsageFigures

__all__ = ["parse_codex"]


def parse_codex(lines: Iterable[bytes]) -> UsageFigures:
    """The usage codex's output reports (every field None when it says nothing)."""
    for _ in lines:
        pass
    return UsageFigures()
