"""The console ``ralph`` prints its results on: rich, without highlighting or emoji codes,
going quiet when its reader goes away. A module of its own so that a lean command (``ralph
runs``) prints exactly as the others without loading typer."""

from __future__ import annotations

import os
import sys

from rich.console import Console

__all__ = ["OutputConsole", "output_console"]


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
