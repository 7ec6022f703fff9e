"""The console ``ralph`` prints its results on: rich, without highlighting or emoji codes,
going quiet when its reader goes away, and the tables it prints. A module of its own so that a
lean command (``ralph runs``, ``ralph status``) prints exactly as the others without loading
typer."""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING

from rich.console import Console

if TYPE_CHECKING:
    from collections.abc import Iterable, Sequence

    from rich.table import Table

__all__ = ["OutputConsole", "error_console", "output_console", "text_table", "usage_error"]


class OutputConsole(Console):
    """A console that goes quiet when its reader goes away, instead of ending the program."""

    def on_broken_pipe(self) -> None:
        """Stop printing; the command still finishes its work (and writes its files)."""
        self.quiet = True
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())


def output_console() -> OutputConsole:
    """The console for a command's results on stdout (never highlighted: values are shown as
    they are)."""
    return OutputConsole(highlight=False, emoji=False)


def error_console() -> Console:
    """The console for what went wrong, on stderr."""
    return Console(stderr=True, highlight=False, emoji=False)


def usage_error(console: Console, message: str) -> None:
    """Say that the command was used wrongly: ``error:`` and ``message`` (its text never
    markup: messages quote paths, config sections and extras such as ``[store]``)."""
    from rich.markup import escape

    from pipeline.app.cli._safe import message_safe

    console.print(f"[bold red]error:[/] {escape(message_safe(message))}", soft_wrap=True)


def text_table(
    heads: Sequence[str],
    rows: Iterable[Sequence[str]],
    title: str | None = None,
    *,
    fold: bool = False,
    pairs: bool = False,
) -> Table:
    """A table of ``rows`` under ``heads``, its title and every cell text (never markup or
    emoji codes) with its control characters shown: cells quote agents' words and folders'
    names. ``fold`` folds a long cell instead of cutting it (a name cut short names nothing);
    ``pairs`` shows (what, value) rows with no header, the whats in bold (``ralph status``'s
    table, which the full command and the lean one print alike)."""
    # Imported here: a lean command that prints no table does not load them.
    from rich.table import Table
    from rich.text import Text

    from pipeline.app.cli._safe import terminal_safe

    table = Table(
        title=None if title is None else Text(terminal_safe(title)), show_header=not pairs
    )
    for index, head in enumerate(heads):
        style = "bold" if pairs and index == 0 else None
        table.add_column(head, style=style, overflow="fold" if fold else "ellipsis")
    for row in rows:
        table.add_row(*(Text(terminal_safe(cell)) for cell in row))
    return table
