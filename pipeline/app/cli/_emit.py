"""``ralph emit``, kept lean: an agent runs it once per topic, so it starts without typer,
rich, the engine or the stores (about 3x a bare interpreter instead of 50x). The typer
command of the same name forwards here, so there is one parser: argparse, which the plain
shapes agents use most (``emit TOPIC [PAYLOAD] [--json]``, no other option) skip, because
importing and building it costs a sixth of the command; a test holds the two to the same
reading of every argument list.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from pipeline.app.cli._safe import terminal_safe
from pipeline.handlers.intake._emit import MAX_TOPIC_CHARS, DiskFullError, EmitError, emit
from pipeline.handlers.intake._files import MARKER, EventsFileError, UnsafeFileError, emit_target

# ``typing`` is imported for the type checker only: ``ralph emit`` loads this module, and
# an agent runs it once per topic.
TYPE_CHECKING = False
if TYPE_CHECKING:
    import argparse
    from collections.abc import Callable
    from typing import Final

__all__ = [
    "FILE_ONLY_KINDS",
    "HELP",
    "NOTE_PREFIXES",
    "Arguments",
    "emitted",
    "lean_parser",
    "main",
    "parsed_arguments",
    "plain_arguments",
    "say",
]

HELP: Final = "Append a topic to the run's events file (agents call this from their shell)."
"""What ``ralph emit`` is for, as the help of ``ralph`` and of ``ralph emit`` say it."""

_PAYLOAD_FILE_BYTES: Final = 64 << 20
"""The largest payload read from stdin or a file (an events line that long is far over any
sensible intake limit already)."""

_USAGE_ERROR: Final = 2

_STORE_ERROR: Final = 4
"""A full disk, as every command that writes says it (``pipeline.app.cli._app.STORE_ERROR``)."""


_HELP_WIDTH: Final = 100

FILE_ONLY_KINDS: Final = frozenset({"commit_message", "format_correction"})
"""``RALPH_PROMPT_KIND`` of a prompt that asks for a file only: the values of
``pipeline.core.state.FILE_ONLY_PROMPTS``, spelled out because this module must not load the
pure core (a test holds the two equal). The fold acts on no topic from such a turn whatever
writes it; here the agent is told so at once (the line is written all the same: the log keeps
what the agent published), where ralph's MCP tool refuses the call."""

NOTE_PREFIXES: Final = ("ralph.memory.", "ralph.task.")
"""The topics of memory and task notes (``pipeline.events.CONTEXT_TOPICS``, held equal by a
test): taken from every turn, a file-only one too, because they steer nothing."""


def lean_parser(prog: str, description: str | None = None) -> argparse.ArgumentParser:
    """An argparse parser for a lean command (``ralph emit``, an agent's ``ralph memory``),
    with ralph's wording of a usage error (and its exit status, 2)."""
    import argparse

    class _Parser(argparse.ArgumentParser):
        def error(self, message: str) -> None:  # type: ignore[override]
            self.print_usage(sys.stderr)
            say(f"error: {message}")
            raise SystemExit(_USAGE_ERROR)

    class _Formatter(argparse.HelpFormatter):
        """argparse's help formatter, measuring the terminal only when help is shown
        (argparse builds a formatter for every argument, and measuring imports ``shutil``,
        which with its compression modules costs more than the rest of a parse)."""

        def __init__(self, prog: str) -> None:
            super().__init__(prog, width=_HELP_WIDTH)

    return _Parser(prog=prog, description=description, formatter_class=_Formatter)


def _parser() -> argparse.ArgumentParser:
    parser = lean_parser("ralph emit", HELP)
    parser.add_argument(
        "topic",
        help=f"The topic: letters, digits and _ . : - only, at most {MAX_TOPIC_CHARS} "
        "characters, no empty dot-separated part.",
    )
    parser.add_argument(
        "payload", nargs="?", help="Text, or JSON with --json; - reads it from stdin."
    )
    parser.add_argument(
        "--json", dest="as_json", action="store_true", help="The payload is a JSON value."
    )
    parser.add_argument(
        "--file",
        dest="payload_file",
        metavar="FILE",
        type=Path,
        help="Read the payload from this file (for large payloads).",
    )
    return parser


def say(message: str) -> None:
    """``message`` on standard error."""
    # Paths and topics in messages come from the workspace an agent controls: shown escaped.
    sys.stderr.write(terminal_safe(message, newlines=True) + "\n")


def payload_text(payload: str | None, payload_file: Path | None) -> str | None:
    """The payload: the argument, stdin for ``-``, or the file ``--file`` names."""
    if payload_file is not None and payload is not None:
        raise EmitError("give the payload once: as PAYLOAD, as - (stdin) or with --file")
    try:
        if payload_file is not None:
            with payload_file.open("rb") as handle:
                data = handle.read(_PAYLOAD_FILE_BYTES + 1)
        elif payload == "-":
            data = sys.stdin.buffer.read(_PAYLOAD_FILE_BYTES + 1)
        else:
            return payload
    except OSError as error:
        raise EmitError(f"cannot read the payload from {payload_file}: {error.strerror}") from error
    if len(data) > _PAYLOAD_FILE_BYTES:
        raise EmitError(f"the payload is over {_PAYLOAD_FILE_BYTES} bytes")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise EmitError(f"the payload is not UTF-8 text: {error}") from error


class Arguments:
    """What ``ralph emit`` was asked to do. A plain class: attrs and dataclasses cost more to
    import than this command's whole parse."""

    __slots__ = ("as_json", "payload", "payload_file", "topic")

    def __init__(
        self,
        topic: str,
        payload: str | None = None,
        *,
        as_json: bool = False,
        payload_file: Path | None = None,
    ) -> None:
        self.topic = topic
        self.payload = payload
        self.as_json = as_json
        self.payload_file = payload_file


def plain_arguments(argv: list[str]) -> Arguments | None:
    """``argv`` read without argparse when it is a plain shape: one or two positionals that
    start with no ``-``, and ``--json`` at most once anywhere. None for anything else (help,
    ``--file``, ``-`` for stdin, ``--``, a mistake), which argparse reads and words."""
    as_json = "--json" in argv
    positionals = [item for item in argv if item != "--json"]
    if len(positionals) + as_json != len(argv) or not 1 <= len(positionals) <= 2:
        return None
    if any(item.startswith("-") for item in positionals):
        return None
    return Arguments(*positionals, as_json=as_json)


def parsed_arguments(argv: list[str]) -> Arguments:
    """``argv`` as argparse reads it (exit 2 with its usage on a mistake; help exits 0)."""
    parser = _parser()
    # "emit TOPIC --json PAYLOAD" puts an option between the positionals, which only the
    # intermixed parse takes; it cannot take "--" before them ("emit -- -x"), the plain one can.
    parse = parser.parse_args if "--" in argv else parser.parse_intermixed_args
    namespace = parse(argv)
    return Arguments(
        topic=namespace.topic,
        payload=namespace.payload,
        as_json=namespace.as_json,
        payload_file=namespace.payload_file,
    )


def main(argv: list[str]) -> int:
    """Run ``ralph emit ARGV``; the exit status: 0 written, 1 the workspace's events file is
    unsafe to write (not the command line's fault), 2 bad input, 4 a full disk."""
    arguments = plain_arguments(argv) or parsed_arguments(argv)
    return emitted(
        arguments.topic,
        lambda: payload_text(arguments.payload, arguments.payload_file),
        as_json=arguments.as_json,
        done=f"Event emitted: {arguments.topic}",
    )


def emitted(topic: str, text: Callable[[], str | None], *, as_json: bool, done: str) -> int:
    """Append ``topic`` with the payload ``text()`` gives to the run's events file and say
    ``done``; the exit status: 0 written, 1 the workspace's events file is unsafe to write
    (not the command line's fault), 2 bad input (``EmitError`` from ``text`` too), 4 a full
    disk (nothing written)."""
    try:
        payload = text()
        target, fallback = emit_target(Path.cwd(), os.environ)
        emit(target, topic, payload, as_json=as_json)
    except UnsafeFileError as error:
        say(f"error: not written: {error}")
        return 1
    except DiskFullError as error:
        say(f"error: not written: {error}")
        return _STORE_ERROR
    except (EmitError, EventsFileError) as error:
        say(f"error: {error}")
        return _USAGE_ERROR
    if os.environ.get("RALPH_PROMPT_KIND") in FILE_ONLY_KINDS and not topic.startswith(
        NOTE_PREFIXES
    ):
        # Written all the same (the log keeps what the agent published; the fold decides) and
        # exit 0, so an agent's script that publishes at every turn goes on.
        say(
            "note: this prompt asks only for a file; "
            "ralph takes only memory and task notes from it and will not act on this topic"
        )
    if fallback:
        # Seed 003 AC5: written all the same, but where a person would not look for it.
        say(
            f"note: no run is under way here (no {MARKER}): the line went to {target}, "
            "which no run reads"
        )
    sys.stdout.write(terminal_safe(done) + "\n")
    return 0
