"""Structured agent responses: built-in schemas and the pure classifier (pure)."""

from pipeline.responses._builtin import AGENT_RESPONSE, BUILTIN_SCHEMAS
from pipeline.responses._classify import (
    InvalidSchemaError,
    ResponseStatus,
    ResponseVerdict,
    Violation,
    check_schema,
    classify,
)

__all__ = [
    "AGENT_RESPONSE",
    "BUILTIN_SCHEMAS",
    "InvalidSchemaError",
    "ResponseStatus",
    "ResponseVerdict",
    "Violation",
    "check_schema",
    "classify",
]
