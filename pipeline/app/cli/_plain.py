"""The plain shapes of ``ralph status``, ``events`` and ``respond``, run without typer's
parsing: the command's own function is called with what the command line gives, so its
output is the full command's, printed by the same code.

Typer's parsing (the click command built from the whole app, each parameter converted)
costs a read command about a tenth of its time, and typer 0.29 (which ``pyproject.toml``
keeps out) builds a pydantic adapter for every parameter on top of it. These commands'
common calls name a few options whose values are plain strings or flags, which need no
conversion. Anything else on the command line (another option, ``--help``, a value that
starts with a dash, ``--``, an ``--opt=value`` form, or ``RALPH_STORE`` in the environment,
which the commands read as their store) is left to typer, which parses it as always.
"""

from __future__ import annotations

import importlib
import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Final

__all__ = ["PLAIN_SHAPES", "PlainShape", "arguments", "run_plain"]


# A dataclass, not attrs: the lean paths (``_events_quick``, ``_respond_quick``) load
# dataclasses already (rich and orjson import it), and attrs would add about a tenth to them.
@dataclass(frozen=True, kw_only=True, slots=True)
class PlainShape:
    """A command's plain shape: where its function is, its positional arguments (in order,
    each optional when the function gives it a default), its flags and its string options,
    each mapped to the function's parameter."""

    module: str
    function: str
    positional: tuple[str, ...] = ()
    flags: Mapping[str, str] = field(default_factory=dict)
    options: Mapping[str, str] = field(default_factory=dict)


PLAIN_SHAPES: Final = {
    "status": PlainShape(
        module="pipeline.app.cli._read_commands",
        function="status",
        flags={"--json": "as_json"},
        options={"--run": "run"},
    ),
    "events": PlainShape(
        module="pipeline.app.cli._read_commands",
        function="events",
        positional=("source",),
        options={"--run": "run"},
    ),
    "respond": PlainShape(
        module="pipeline.app.cli._agent_commands",
        function="respond_command",
        positional=("text",),
        options={"--question": "question_id", "--run": "run"},
    ),
}
"""The commands with a plain shape (a test holds each to the typer command's parameters)."""


def arguments(shape: PlainShape, argv: list[str]) -> dict[str, object] | None:
    """The keyword arguments ``argv`` gives the command's function, or None when it is not
    the plain shape."""
    given: dict[str, object] = {}
    positional = list(shape.positional)
    words = iter(argv)
    for word in words:
        if word in shape.flags and shape.flags[word] not in given:
            given[shape.flags[word]] = True
        elif word in shape.options and shape.options[word] not in given:
            value = next(words, None)
            if value is None or value.startswith("-"):
                return None
            given[shape.options[word]] = value
        elif not word.startswith("-") and positional:
            given[positional.pop(0)] = word
        else:
            return None
    return given


def run_plain(command: str, argv: list[str]) -> int | None:
    """Run ``ralph COMMAND ARGV`` through the command's function and return its exit
    status, or return None (having done nothing) when ARGV is not its plain shape."""
    shape = PLAIN_SHAPES.get(command)
    if shape is None or "RALPH_STORE" in os.environ:
        return None
    given = arguments(shape, argv)
    if given is None:
        return None
    import inspect

    function = getattr(importlib.import_module(shape.module), shape.function)
    for name, parameter in inspect.signature(function).parameters.items():
        if name not in given and parameter.default is inspect.Parameter.empty:
            return None  # a required argument is missing: typer says so
    from typer.exceptions import Exit  # loaded already: the command's module declares with typer

    # How typer's main ends a command, which this one must end alike.
    try:
        function(**given)
    except Exit as stop:
        return stop.exit_code
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        # The reader went away: nothing more reaches it, and the interpreter's last flush
        # must not fail again on the closed pipe.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    return 0
