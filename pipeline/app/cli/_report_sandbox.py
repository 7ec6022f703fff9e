"""The run's sandbox shown to people (pure: strings in, strings out): ``ralph report``'s
Sandbox section in HTML and in Markdown (on or off and why, the endpoints agents may reach,
the variables no agent got, by name, and a table of the connections refused), and the words
``ralph status`` and the live panel use are
:func:`pipeline.reducers.views.sandbox_rows` and ``refused_text``.

An endpoint is the text of an agent's own request: every text is escaped (HTML, or literal
Markdown), never markup. A run whose log says nothing of the sandbox (``[sandbox] mode =
"off"``, or a run older than the sandbox) gets none of it.
"""

from __future__ import annotations

from collections.abc import Sequence
from html import escape
from typing import Final

from pipeline.app.cli._report_layout import cells_html, markdown_table, table_html
from pipeline.app.cli._safe import terminal_safe
from pipeline.reducers.views import RefusedConnection, SandboxCheck, SandboxView, counted

__all__ = [
    "SANDBOX_STYLE",
    "sandbox_html",
    "sandbox_markdown",
    "sandbox_summary",
]

SANDBOX_STYLE: Final = """
table.sandbox caption, table.refused caption { text-align: left; font-weight: 600;
                                               padding-bottom: 4px; }
table.sandbox td, table.refused td { max-width: 60em; overflow-wrap: anywhere; }
tr.sandbox-on td.said { color: #1a7f37; }
tr.sandbox-off td.said { color: #9a6700; }
p.refused-none { color: #57606a; margin: 4px 0 0; }
"""
"""The sandbox's part of the page's style (only in a page whose run recorded it)."""

_CHECK_HEADS: Final = ("when", "mode", "sandbox", "endpoints", "withheld variables")
_REFUSED_HEADS: Final = ("endpoint", "agent", "role", "times", "invocations")


def sandbox_summary(view: SandboxView) -> str:
    """The sandbox in a few words: ``sandbox on, 4 refused connections`` (empty when the log
    says nothing of it)."""
    if not view.recorded:
        return ""
    check = view.check
    state = "sandbox not recorded" if check is None else f"sandbox {_on(check)}"
    refused = view.refused_count
    return state + (f", {counted(refused, 'refused connection')}" if refused else "")


def _on(check: SandboxCheck) -> str:
    return "on" if check.on else "off"


def _names(items: Sequence[str]) -> str:
    return ", ".join(items) or "none"


def _check_cells(check: SandboxCheck) -> tuple[str, ...]:
    return (
        check.at.isoformat(timespec="seconds"),
        check.mode.value,
        check.said,
        _names(check.endpoints),
        _names(check.withheld),
    )


def _refused_cells(entry: RefusedConnection) -> tuple[str, ...]:
    invocations = ", ".join(f"#{n}" for n in entry.invocations) or "-"
    return (entry.endpoint, entry.agent, entry.role.value, str(entry.count), invocations)


def _check_html(check: SandboxCheck) -> str:
    when, mode, said, endpoints, withheld = _check_cells(check)
    return (
        f'<tr class="sandbox-{_on(check)}" data-on="{str(check.on).lower()}">'
        f'{cells_html((when, mode))}<td class="said">{escape(terminal_safe(said))}</td>'
        f"{cells_html((endpoints, withheld))}</tr>"
    )


def _refused_html(view: SandboxView) -> str:
    """The refused connections' table; a line saying none was refused when the sandbox was
    on (off, it refused nothing: no line)."""
    if not view.refused:
        check = view.check
        on = check is not None and check.on
        return '<p class="refused-none">No connection was refused.</p>' if on else ""
    body = "".join(
        f'<tr data-endpoint="{escape(terminal_safe(entry.endpoint))}" '
        f'data-count="{entry.count}">{cells_html(_refused_cells(entry))}</tr>'
        for entry in view.refused
    )
    return table_html(_REFUSED_HEADS, body, ' class="refused" id="refused"', "Refused connections")


def sandbox_html(view: SandboxView) -> str:
    """The Sandbox section: a row per check (on or off and why, the endpoints agents may
    reach, the variables withheld, by name) and the refused connections (empty when the log
    says nothing of the sandbox)."""
    if not view.recorded:
        return ""
    body = "".join(_check_html(check) for check in view.checks)
    attrs = ' class="sandbox" id="sandbox"'
    checks = table_html(_CHECK_HEADS, body, attrs, "Sandbox") if view.checks else ""
    return f'<section class="sandbox">{checks}{_refused_html(view)}</section>'


def sandbox_markdown(view: SandboxView) -> list[str]:
    """The Sandbox section in Markdown, each cell literal text: the checks, then the refused
    connections (no line when the log says nothing of the sandbox)."""
    if not view.recorded:
        return []
    lines = ["", "**Sandbox**"]
    if view.checks:
        lines += markdown_table(_CHECK_HEADS, "lllll", map(_check_cells, view.checks))
    if view.refused:
        lines += ["", "**Refused connections**"]
        lines += markdown_table(_REFUSED_HEADS, "lllrl", map(_refused_cells, view.refused))
    elif view.check is not None and view.check.on:
        lines += ["", "No connection was refused."]
    return lines
