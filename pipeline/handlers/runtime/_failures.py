"""Telling an agent's permanent failures from passing ones, by what it printed (pure).

An agent CLI that refuses how it was set up (an option it does not know, a permission mode it
will not use as root, a folder it does not trust, no credentials) fails the same way on every
try: such a failure is reported as ``ErrorKind.CONFIGURATION``, not retriable, with the fix in
its message. The patterns are the CLIs' own messages, checked against the pinned versions
(``docs/architecture/agents/``); terminal colour codes are removed first.
"""

from __future__ import annotations

import re
from typing import Final

__all__ = ["configuration_error", "strip_ansi"]

_ANSI: Final = re.compile(rb"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)")


def strip_ansi(text: bytes) -> bytes:
    """``text`` without terminal escape sequences (colours, cursor moves, titles)."""
    return _ANSI.sub(b"", text)


_KNOWN: Final[tuple[tuple[re.Pattern[bytes], str], ...]] = (
    (
        re.compile(rb"cannot be used with root/sudo privileges"),
        "claude refuses --dangerously-skip-permissions as root: run ralph as a normal user, "
        'or, inside a sandbox, set env = { IS_SANDBOX = "1" } under [agents.NAME]',
    ),
    (
        re.compile(rb"not running in a trusted (?:directory|folder)", re.IGNORECASE),
        "gemini does not trust this folder: give it --skip-trust (the gemini preset does)",
    ),
    (
        re.compile(rb"must specify the GEMINI_API_KEY|Invalid auth method selected"),
        "gemini has no usable credentials: set GEMINI_API_KEY (or its auth settings)",
    ),
    (
        re.compile(rb"Invalid API key|Please run /login|Not logged in", re.IGNORECASE),
        "the agent has no valid credentials: log it in or set its API key",
    ),
    (
        re.compile(
            rb"error: unexpected argument '([^'\n]{1,80})'|unrecognized arguments?: ([^\n]{1,80})"
            rb"|[Uu]nknown (?:option|argument)s?:? '?([^'\n]{1,80})"
        ),
        "the agent rejected its arguments ({}): check command and args under [agents.NAME]",
    ),
)


def configuration_error(output_tail: bytes) -> str | None:
    """Why the agent refused its configuration, with the fix, or None when nothing says so."""
    for pattern, explanation in _KNOWN:
        found = pattern.search(output_tail)
        if found is not None:
            given = next((g for g in found.groups() if g), b"").decode("utf-8", "replace")
            return explanation.format(given.strip()) if "{}" in explanation else explanation
    return None
