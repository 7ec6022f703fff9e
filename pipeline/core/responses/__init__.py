"""Structured agent responses: the built-in schemas (pure data).

Judging a response against its schema is a handler's job (``pipeline.handlers.responses``):
the verdict is recorded in the ``ResponseSubmitted`` fact, and no pure layer validates.
"""

from pipeline.core.responses._builtin import AGENT_RESPONSE, BUILTIN_SCHEMAS

__all__ = ["AGENT_RESPONSE", "BUILTIN_SCHEMAS"]
