"""Writing TOML: the text of a configuration document (pure)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["dump_toml"]


def dump_toml(document: Mapping[str, Any]) -> str:
    """``document`` as TOML text, long strings as multi-line strings where that reads back
    the same (a CRLF in a multi-line string would read back as LF: escaped instead)."""
    import tomli_w  # on first use: most commands never write TOML

    return tomli_w.dumps(document, multiline_strings=not _holds_crlf(document))


def _holds_crlf(value: object) -> bool:
    if isinstance(value, str):
        return "\r\n" in value
    if isinstance(value, dict):
        return any(_holds_crlf(v) for v in value.values())
    if isinstance(value, list):
        return any(_holds_crlf(v) for v in value)
    return False
