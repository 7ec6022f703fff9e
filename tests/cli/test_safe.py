"""Agent text made safe for people: terminals get no control character or bidi override, the
Markdown report no HTML or Markdown of an agent's."""

from __future__ import annotations

import re

from hypothesis import given
from hypothesis import strategies as st

from pipeline.app.cli._safe import markdown_text, message_safe, terminal_safe

UNSAFE = re.compile("[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")


@given(st.text())
def test_terminal_safe_text_holds_no_control_character_or_bidi_override(text: str) -> None:
    """Whatever an agent wrote, what is shown holds none; text without any is unchanged."""
    shown = terminal_safe(text)
    assert UNSAFE.search(shown) is None
    if UNSAFE.search(text) is None:
        assert shown == text


def test_each_unsafe_character_is_shown_escaped_and_visible() -> None:
    """ESC, BEL, the C1 CSI, a newline and the right-to-left override, as a person reads them."""
    assert terminal_safe("a\x1b]0;t\x07b\x9b2J\nc\u202ed") == "a\\x1b]0;t\\x07b\\x9b2J\\nc\\u202ed"
    assert terminal_safe("one\ntwo", newlines=True) == "one\ntwo"


def test_messages_keep_their_lines_and_lose_url_passwords() -> None:
    """An error naming a store URL never shows its password."""
    assert message_safe("postgresql://me:pw123456@db/x\nnext\x1b[2J") == (
        "postgresql://me:[redacted:password]@db/x\nnext\\x1b[2J"
    )


@given(st.text())
def test_markdown_text_holds_no_tag_no_link_and_no_line_break(text: str) -> None:
    """No ``<``, no unescaped ``[`` or ``|``, no line break: one literal table cell."""
    cell = markdown_text(text)
    assert "<" not in cell
    assert ">" not in cell
    assert "\n" not in cell
    assert re.search(r"(?<!\\)(?:\\\\)*[\[|]", cell) is None


def test_markdown_text_keeps_quotes_as_typed() -> None:
    """An apostrophe or a double quote reads as itself in the Markdown file (no tag can open
    around it: ``<`` is escaped); an ampersand is still escaped."""
    assert markdown_text('it\'s "done" & <b>') == 'it\'s "done" &amp; &lt;b&gt;'
