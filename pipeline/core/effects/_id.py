"""The id every effect carries (pure)."""

from __future__ import annotations

from typing import NewType

__all__ = ["EffectId"]

EffectId = NewType("EffectId", str)
"""``<run id>:<sequence>``: the same state always asks for the same effect under the same id."""
