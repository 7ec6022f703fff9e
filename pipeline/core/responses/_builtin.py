"""The schemas that ship with ralph-pipeline, by name (pure data).

``agent-response`` is the shape of a tool-calling agent's answer: an ``action`` to take, its
``parameters``, and optionally the ``reasoning`` behind it; nothing else.
"""

from __future__ import annotations

import types
from collections.abc import Mapping
from typing import Final

from pipeline.events import Json

__all__ = ["AGENT_RESPONSE", "BUILTIN_SCHEMAS"]

AGENT_RESPONSE: Final = Json.of(
    {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": "urn:ralph-pipeline:schema:agent-response",
        "title": "agent-response",
        "type": "object",
        "properties": {
            "action": {"type": "string", "minLength": 1},
            "parameters": {"type": "object"},
            "reasoning": {"type": "string"},
        },
        "required": ["action", "parameters"],
        "additionalProperties": False,
    }
)
"""``{"action": str, "parameters": object, "reasoning"?: str}`` and no other property."""

BUILTIN_SCHEMAS: Final[Mapping[str, Json]] = types.MappingProxyType(
    {"agent-response": AGENT_RESPONSE}
)
"""Built-in schemas by the name ``response_schema`` may give instead of a file."""
