"""Checking that a configured branch or revision is a name git cannot take for an option (pure).

``rebase_onto`` and ``branch`` reach git's command line; a value such as ``--exec=...`` would be
read as an option. A value is accepted only when it is a well-formed ref name (the rules of
``git check-ref-format``, checked here without running git) that does not start with ``-``.
"""

from __future__ import annotations

import re

__all__ = ["ref_problem"]

_FORBIDDEN = re.compile(r"[\x00-\x20\x7f~^:?*\[\\]")


def ref_problem(value: str) -> str | None:
    """Why ``value`` is not a usable ref name (None: it is)."""
    if not value:
        return "must name a branch or revision"
    if value.startswith("-"):
        return f"{value!r} starts with '-' and would reach git as an option"
    if value == "@" or "@{" in value:
        return f"{value!r} is not a ref name (no '@' alone or '@{{')"
    match = _FORBIDDEN.search(value)
    if match:
        return f"{value!r} is not a ref name (it holds {match.group()!r})"
    if ".." in value or "//" in value or value.endswith(("/", ".", ".lock")) or value[0] in "/.":
        return (
            f"{value!r} is not a ref name "
            "(no '..' or '//', no '/' or '.' first, no '/', '.' or '.lock' last)"
        )
    if any(part.startswith(".") or part.endswith(".lock") for part in value.split("/")):
        return f"{value!r} is not a ref name (a component starts with '.' or ends with '.lock')"
    return None
