"""The console ``ralph`` prints its results on: rich, without highlighting or emoji codes,
going quiet when its reader goes away. A module of its own so that a lean command (``ralph
runs``) prints exactly as the others without loading typer."""

from __future__ import annotations

import os
import sys

from rich.console import Console

__all__ = ["OutputConsole", "error_console", "output_console", "usage_error"]


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
