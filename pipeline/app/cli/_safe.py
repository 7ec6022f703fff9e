"""Making text that agents wrote safe to show to a person (pure).

Agents write topics, payloads, failure messages, questions and even their own names into the
log; the log keeps them byte for byte. Shown on a terminal as they are, an ``ESC ]0;...`` sets
the window title, ``ESC [2J`` clears the screen (to print a fake ``Exit status 0``), OSC 52
writes the clipboard, and bidi overrides (U+202E) reorder what is read. :func:`terminal_safe`
shows every such character escaped and visible instead (``\\x1b``, ``\\u202e``); every
human-facing output passes agent text through it, and prints it with rich's markup and emoji
off (``root:x:0:0`` stays itself, ``[bold]`` stays text).
"""

from __future__ import annotations

import re

# ``typing`` is imported for the type checker only: ``ralph emit`` loads this module, and
# an agent runs it once per topic.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Final


__all__ = ["markdown_text", "message_safe", "terminal_safe"]

_BIDI: Final = "\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069"
"""The Arabic letter mark, the left-to-right and right-to-left marks, embeddings, overrides and
isolates: invisible characters that change the order text is shown in."""
_UNSAFE: Final = re.compile(f"[\\x00-\\x1f\\x7f-\\x9f{_BIDI}]")
"""C0 and C1 control characters (ESC, CSI U+009B, BEL, CR, backspace, ...), DEL, and bidi."""
_UNSAFE_BUT_NEWLINE: Final = re.compile(f"[\\x00-\\x09\\x0b-\\x1f\\x7f-\\x9f{_BIDI}]")


_NAMED: Final = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _escaped(match: re.Match[str]) -> str:
    char = match.group()
    named = _NAMED.get(char)
    if named is not None:
        return named
    code = ord(char)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def terminal_safe(text: str, *, newlines: bool = False) -> str:
    """``text`` with every control character and bidi override shown escaped (``\\x1b``,
    ``\\n``, ``\\u202e``); ``newlines`` keeps line breaks as they are."""
    pattern = _UNSAFE_BUT_NEWLINE if newlines else _UNSAFE
    if pattern.search(text) is None:
        return text
    return pattern.sub(_escaped, text)


def message_safe(text: str) -> str:
    """An error or warning message as shown: lines kept, control characters escaped, and the
    password of any URL in it (a store URL) masked."""
    if "://" in text:  # every URL with a password has it; the masking module is slow to load
        # Imported here: ``ralph emit`` shows messages through this module and must start fast.
        from pipeline.handlers.redaction import mask_url_passwords

        text = mask_url_passwords(text)
    return terminal_safe(text, newlines=True)


_MARKDOWN_SPECIAL: Final = re.compile(r"([\\`*_\[\]!|~])")
"""What makes inline Markdown more than text: emphasis, code, links and images, table cells,
strike-through (HTML is escaped apart)."""


def markdown_text(text: object) -> str:
    """``text`` as literal Markdown inline text (one table cell): HTML escaped (no tag of an
    agent's reaches a renderer), Markdown punctuation backslash-escaped (no link, image or
    emphasis), line breaks as spaces, and control characters escaped."""
    one_line = terminal_safe(str(text).replace("\r\n", " ").replace("\n", " "))
    import html  # only markdown needs it; the terminal path stays lean

    # Quotes stay as typed: with ``<`` escaped no tag, so no attribute, can open around them
    # (an apostrophe as ``&#x27;`` read badly in the file itself).
    return html.escape(_MARKDOWN_SPECIAL.sub(r"\\\1", one_line), quote=False)
