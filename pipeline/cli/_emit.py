"""``ralph emit``, kept lean: an agent runs it once per topic, so it starts without typer,
rich, the engine or the stores (about 2x a bare interpreter instead of 30x). The typer
command of the same name forwards here, so there is one parser.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from pipeline.cli._safe import terminal_safe
from pipeline.handlers.intake._emit import MAX_TOPIC_CHARS, EmitError, emit
from pipeline.handlers.intake._files import EventsFileError, UnsafeFileError, events_file_for

# ``typing`` is imported for the type checker only: ``ralph emit`` loads this module, and
# an agent runs it once per topic.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Final

__all__ = ["HELP", "main"]

HELP: Final = "Append a topic to the run's events file (agents call this from their shell)."
"""What ``ralph emit`` is for, as the help of ``ralph`` and of ``ralph emit`` say it."""

_PAYLOAD_FILE_BYTES: Final = 64 << 20
"""The largest payload read from stdin or a file (an events line that long is far over any
sensible intake limit already)."""

_USAGE_ERROR: Final = 2


class _Parser(argparse.ArgumentParser):
    """argparse, with ralph's wording of a usage error (and its exit status, 2)."""

    def error(self, message: str) -> None:  # type: ignore[override]
        self.print_usage(sys.stderr)
        _say(f"error: {message}")
        raise SystemExit(_USAGE_ERROR)


class _Formatter(argparse.HelpFormatter):
    """argparse's help formatter, measuring the terminal only when help is shown (argparse
    builds a formatter for every argument, and measuring imports ``shutil``, which with its
    compression modules costs more than the rest of a parse)."""

    def __init__(self, prog: str) -> None:
        super().__init__(prog, width=_HELP_WIDTH)


_HELP_WIDTH: Final = 100


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="ralph emit", description=HELP, formatter_class=_Formatter)
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


def _say(message: str) -> None:
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


def main(argv: list[str]) -> int:
    """Run ``ralph emit ARGV``; the exit status: 0 written, 1 the workspace's events file is
    unsafe to write (not the command line's fault), 2 bad input."""
    parser = _parser()
    # "emit TOPIC --json PAYLOAD" puts an option between the positionals, which only the
    # intermixed parse takes; it cannot take "--" before them ("emit -- -x"), the plain one can.
    parse = parser.parse_args if "--" in argv else parser.parse_intermixed_args
    arguments = parse(argv)
    try:
        text = payload_text(arguments.payload, arguments.payload_file)
        target = events_file_for(Path.cwd(), os.environ)
        emit(target, arguments.topic, text, as_json=arguments.as_json)
    except UnsafeFileError as error:
        _say(f"error: not written: {error}")
        return 1
    except (EmitError, EventsFileError) as error:
        _say(f"error: {error}")
        return _USAGE_ERROR
    sys.stdout.write(terminal_safe(f"Event emitted: {arguments.topic}") + "\n")
    return 0
