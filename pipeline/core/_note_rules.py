"""The shape of a memory or task note, shared by the fold that judges notes and by the lean
``ralph memory``/``ralph task`` an agent runs (so this module imports nothing heavy).
"""

import re
import zlib

__all__ = [
    "ID_PATTERN",
    "MAX_MEMORY_CHARS",
    "MAX_TAGS",
    "MAX_TAG_CHARS",
    "MAX_TITLE_CHARS",
    "new_id",
]

ID_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,39}")
"""An id of a memory or task, and a tag: what a shell passes unquoted and a prompt shows."""

MAX_MEMORY_CHARS = 2000
"""The longest memory, in characters."""
MAX_TITLE_CHARS = 300
"""The longest task title or blocking reason, in characters."""
MAX_TAGS = 8
"""The most tags a memory has."""
MAX_TAG_CHARS = 40
"""The longest tag."""


def new_id(prefix: str, text: str) -> str:
    """The id of a new memory (``m``) or task (``t``) with ``text``: from the text itself, so
    that an agent's call made again (its invocation redone after a crash) or a person's repeated
    one names the same memory or task, and the book refuses it as there already. (CRC-32:
    as many ids as eight hex digits of a cryptographic hash, at a tenth of the import: an
    agent runs this once per note.)"""
    return f"{prefix}-{zlib.crc32(text.strip().encode()):08x}"
