"""The scripted agent: a real agent program that follows a script instead of a model (I/O).

``python -m pipeline.app.agents.scripted SCRIPT`` reads SCRIPT (TOML). The script holds a list of
steps per prompt kind (``planning``, ``development``, ``review``, ``review_fix``,
``commit_message``, ``dev_fix``, ``format_correction``, ``hat``, or ``default`` for any kind
without its own list), and per hat of a topology (``[[hats.NAME]]``: the steps of that hat,
``RALPH_HAT``, before the ``hat`` list); each invocation takes the next step of its list, and
the last step repeats once the list is used up. A step may::

    print = "text for the output"     # written to stdout
    write = { "path" = "content" }    # files written, relative to the workspace
    emit = [["topic", "payload"]]     # lines appended to the run's events file
    raw_lines = ["not json"]          # lines appended as they are (a misbehaving agent)
    save_prompt = "path"              # the prompt received on stdin, saved byte for byte
    spawn = ["sleep", "300"]          # a child process started and left running
    delay_s = 0.5                     # a pause before exiting
    hang = true                       # never exit (until killed)
    exit = 0                          # the exit status

How many steps of each kind each script has taken is kept in
``.agent/scripted-agent-state.json`` under the workspace root (``RALPH_WORKSPACE_ROOT``, else
the current directory), so consecutive invocations move through the script: in ``.agent``,
which an agent may write in the sandbox (``.ralph`` is read-only to it). A malformed script
exits 2 with a one-line error.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import tomllib
from pathlib import Path
from typing import Any, final

from attrs import field, frozen
from cattrs import transform_error
from cattrs.errors import BaseValidationError
from cattrs.preconf.orjson import make_converter

from pipeline.core._strict import configure_primitives

__all__ = ["Script", "Step", "main"]


@final
@frozen(kw_only=True)
class Step:
    """What one invocation does."""

    print: str = ""
    write: dict[str, str] = field(factory=dict)
    emit: tuple[tuple[str, str], ...] = ()
    raw_lines: tuple[str, ...] = ()
    save_prompt: str | None = None
    spawn: tuple[str, ...] = ()
    delay_s: float = 0.0
    hang: bool = False
    exit: int = 0


@final
@frozen(kw_only=True)
class Script:
    """Steps per prompt kind."""

    planning: tuple[Step, ...] = ()
    development: tuple[Step, ...] = ()
    review: tuple[Step, ...] = ()
    review_fix: tuple[Step, ...] = ()
    commit_message: tuple[Step, ...] = ()
    dev_fix: tuple[Step, ...] = ()
    format_correction: tuple[Step, ...] = ()
    hat: tuple[Step, ...] = ()
    default: tuple[Step, ...] = ()
    hats: dict[str, tuple[Step, ...]] = field(factory=dict)
    """Steps per hat of a topology, by the hat's name."""

    def steps(self, kind: str, hat: str = "") -> tuple[Step, ...]:
        """The steps for ``kind`` worn as ``hat`` (the hat's own, else the kind's, else the
        default steps)."""
        if kind == "hat" and self.hats.get(hat):
            return self.hats[hat]
        own: tuple[Step, ...] = getattr(self, kind, ()) if kind in _KINDS else ()
        return own or self.default


_KINDS = frozenset(a for a in Script.__annotations__ if a not in ("default", "hats"))
_CONVERTER = make_converter(forbid_extra_keys=True)
configure_primitives(_CONVERTER)


def load_script(path: Path) -> Script:
    """The script at ``path``; raises ValueError with a one-line message when it is malformed."""
    try:
        data = tomllib.loads(path.read_text("utf-8"))
        script: Script = _CONVERTER.structure(data, Script)
    except OSError as error:
        raise ValueError(f"cannot read the script {path}: {error.strerror}") from error
    except tomllib.TOMLDecodeError as error:
        raise ValueError(f"{path}: not valid TOML: {error}") from error
    except BaseValidationError as error:
        raise ValueError(f"{path}: " + "; ".join(transform_error(error))) from error
    return script


def _next_step(
    script: Script, script_path: Path, kind: str, root: Path, hat: str = ""
) -> Step | None:
    state_path = root / ".agent" / "scripted-agent-state.json"
    taken: dict[str, Any] = {}
    if state_path.is_file():
        taken = json.loads(state_path.read_text("utf-8"))
    steps = script.steps(kind, hat)
    # Counted per script, so that two scripted agents in one chain keep their own places.
    key = f"{script_path.resolve()}:{kind}" + (f":{hat}" if hat in script.hats else "")
    count = int(taken.get(key, 0))
    taken[key] = count + 1
    state_path.parent.mkdir(parents=True, exist_ok=True)
    state_path.write_text(json.dumps(taken), "utf-8")
    if not steps:
        return None
    return steps[min(count, len(steps) - 1)]


def _perform(step: Step, root: Path) -> int:
    if step.save_prompt is not None:
        (root / step.save_prompt).write_bytes(sys.stdin.buffer.read())
    for relative, content in step.write.items():
        target = root / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(content, "utf-8")
    if step.emit or step.raw_lines:
        # Imported only when needed: the agent starts once per invocation, and most steps
        # never emit (the intake loads the whole event vocabulary).
        from pipeline.handlers.intake import emit, events_file_for

        events_file = events_file_for(Path.cwd(), os.environ)
        # The same function as `ralph emit`, called in-process: one O_APPEND write per line.
        for topic, payload in step.emit:
            emit(events_file, topic, payload)
        with events_file.open("ab") as handle:
            for line in step.raw_lines:
                handle.write(line.encode() + b"\n")
    if step.spawn:
        subprocess.Popen(list(step.spawn), stdin=subprocess.DEVNULL)  # left running on purpose
    if step.print:
        sys.stdout.write(step.print + "\n")
        sys.stdout.flush()
    if step.delay_s:
        time.sleep(step.delay_s)
    while step.hang:
        time.sleep(3600)
    return step.exit


def main(argv: list[str] | None = None) -> int:
    """Run one invocation of the script named in ``argv``; returns the exit status."""
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        sys.stderr.write("usage: python -m pipeline.app.agents.scripted SCRIPT\n")
        return 2
    try:
        script = load_script(Path(args[0]))
    except ValueError as error:
        sys.stderr.write(f"scripted agent: {error}\n")
        return 2
    root = Path(os.environ.get("RALPH_WORKSPACE_ROOT") or Path.cwd())
    kind = os.environ.get("RALPH_PROMPT_KIND", "default")
    hat = os.environ.get("RALPH_HAT", "")
    step = _next_step(script, Path(args[0]), kind, root, hat)
    if step is None:
        return 0
    return _perform(step, root)


if __name__ == "__main__":
    sys.exit(main())
