"""Telling an agent's permanent failures from passing ones, by what it printed (pure).

An agent CLI that refuses how it was set up (an option it does not know, a permission mode it
will not use as root, a folder it does not trust, no credentials) fails the same way on every
try: such a failure is reported as ``ErrorKind.CONFIGURATION``, not retriable, with the fix in
its message. The patterns are the CLIs' own messages, checked against the pinned versions and
declared by each CLI's module in ``pipeline.core.agents`` (its ``hints``); terminal colour
codes are removed first. A rate limit is told the same way, and a failure's message quotes
the output's last line.
"""

from __future__ import annotations

import re
from typing import Final

from pipeline.core.agents import FailureHint, failure_hints

__all__ = ["configuration_error", "is_rate_limited", "last_line", "strip_ansi"]

_ANSI: Final = re.compile(rb"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)")


_RATE_LIMIT: Final = re.compile(
    rb"rate[ _-]?limit|too many requests|\b429\b|quota (?:exceeded|exhausted)|usage limit|"
    rb"resource[ _]exhausted|overloaded",
    re.IGNORECASE,
)


def is_rate_limited(output_tail: bytes) -> bool:
    """Whether an agent's output says it was rate limited (or its provider overloaded)."""
    return _RATE_LIMIT.search(output_tail) is not None


def last_line(tail: bytes) -> str:
    """The last non-blank line of ``tail``, at most 300 characters."""
    lines = [line for line in tail.decode("utf-8", "replace").splitlines() if line.strip()]
    return lines[-1].strip()[:300] if lines else "no output"


def strip_ansi(text: bytes) -> bytes:
    """``text`` without terminal escape sequences (colours, cursor moves, titles)."""
    return _ANSI.sub(b"", text)


_GENERIC: Final = (
    FailureHint(
        pattern=rb"Invalid API key|Please run /login|Not logged in",
        says="the agent has no valid credentials: log it in or set its API key",
        ignore_case=True,
    ),
    FailureHint(
        pattern=rb"error: unexpected argument '([^'\n]{1,80})'"
        rb"|unrecognized arguments?: ([^\n]{1,80})"
        rb"|[Uu]nknown (?:option|argument)s?:? '?([^'\n]{1,80})",
        says="the agent rejected its arguments ({}): check command and args under [agents.NAME]",
    ),
)
"""Failures any CLI may say in these words; each CLI's own are its module's ``hints``."""


def configuration_error(output_tail: bytes) -> str | None:
    """Why the agent refused its configuration, with the fix, or None when nothing says so."""
    for hint in (*failure_hints(), *_GENERIC):
        found = re.search(hint.pattern, output_tail, re.IGNORECASE if hint.ignore_case else 0)
        if found is not None:
            given = next((g for g in found.groups() if g), b"").decode("utf-8", "replace")
            return hint.says.format(given.strip()) if "{}" in hint.says else hint.says
    return None
