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
import sys
import time
import tomllib
from pathlib import Path
from typing import Any  # loaded by tomllib anyway

__all__ = ["Script", "Step", "load_script", "main"]

# The agent starts once per invocation (thousands of times in the test suite), so it loads the
# standard library's lightest modules only: the script is checked here by hand, not structured
# by cattrs into attrs classes, which took more than half of each start (issue 48).


_STEP_DEFAULTS: dict[str, Any] = {
    "print": "",
    "write": {},
    "emit": (),
    "raw_lines": (),
    "save_prompt": None,
    "spawn": (),
    "delay_s": 0.0,
    "hang": False,
    "exit": 0,
}
"""Every field of a step and its value when the step leaves it out."""


class Step:
    """What one invocation does."""

    __slots__ = tuple(_STEP_DEFAULTS)
    print: str
    write: dict[str, str]
    emit: tuple[tuple[str, str], ...]
    raw_lines: tuple[str, ...]
    save_prompt: str | None
    spawn: tuple[str, ...]
    delay_s: float
    hang: bool
    exit: int

    def __init__(self, **fields: Any) -> None:
        values = {**_STEP_DEFAULTS, **fields}
        for name in self.__slots__:
            setattr(self, name, values[name])


_KINDS = (
    "planning",
    "development",
    "review",
    "review_fix",
    "commit_message",
    "dev_fix",
    "format_correction",
    "hat",
)


class Script:
    """Steps per prompt kind (``default``: for a kind without its own), and per hat of a
    topology, by the hat's name."""

    __slots__ = ("by_kind", "default", "hats")
    by_kind: dict[str, tuple[Step, ...]]
    default: tuple[Step, ...]
    hats: dict[str, tuple[Step, ...]]

    def __init__(
        self,
        by_kind: dict[str, tuple[Step, ...]],
        default: tuple[Step, ...],
        hats: dict[str, tuple[Step, ...]],
    ) -> None:
        self.by_kind = by_kind
        self.default = default
        self.hats = hats

    def steps(self, kind: str, hat: str) -> tuple[Step, ...]:
        """The steps for ``kind`` worn as ``hat`` (the hat's own, else the kind's, else the
        default steps)."""
        if kind == "hat" and self.hats.get(hat):
            return self.hats[hat]
        return self.by_kind.get(kind) or self.default


def _text(value: object, where: str, problems: list[str]) -> str:
    """``value`` if it is a string (never coerced), else a problem noted."""
    if type(value) is not str:
        problems.append(f"expected a string, got {value!r} @ {where}")
        return ""
    return value


def _texts(value: object, where: str, problems: list[str]) -> tuple[str, ...]:
    if type(value) is not list:
        problems.append(f"expected a list of strings, got {value!r} @ {where}")
        return ()
    return tuple(_text(item, f"{where}[{i}]", problems) for i, item in enumerate(value))


def _step_field(name: str, value: object, where: str, problems: list[str]) -> object:
    """One field of a step, checked as strictly as the engine's own configuration is."""
    if name in ("print", "save_prompt"):
        return _text(value, where, problems)
    if name in ("raw_lines", "spawn"):
        return _texts(value, where, problems)
    if name == "write":
        if type(value) is not dict:
            problems.append(f"expected a table of paths and contents, got {value!r} @ {where}")
            return {}
        return {key: _text(text, f"{where}.{key}", problems) for key, text in value.items()}
    if name == "emit":
        pairs = []
        for i, pair in enumerate(value if type(value) is list else [value]):
            if type(pair) is not list or len(pair) != 2:
                problems.append(f"expected a [topic, payload] pair, got {pair!r} @ {where}[{i}]")
                continue
            topic = _text(pair[0], f"{where}[{i}][0]", problems)
            pairs.append((topic, _text(pair[1], f"{where}[{i}][1]", problems)))
        return tuple(pairs)
    if name == "delay_s":
        # A whole number is a number too (TOML's ``3`` for 3.0), but a boolean or text is not.
        if type(value) is not float and type(value) is not int:
            problems.append(f"expected a number, got {value!r} @ {where}")
            return 0.0
        return float(value)
    if name == "hang":
        if type(value) is not bool:
            problems.append(f"expected a boolean, got {value!r} @ {where}")
        return value is True
    if type(value) is not int:  # exit
        problems.append(f"expected an integer, got {value!r} @ {where}")
        return 0
    return value


def _steps(value: object, where: str, problems: list[str]) -> tuple[Step, ...]:
    if type(value) is not list:
        problems.append(f"expected a list of steps ([[{where[2:]}]]), got {value!r} @ {where}")
        return ()
    steps = []
    for i, table in enumerate(value):
        at = f"{where}[{i}]"
        if type(table) is not dict:
            problems.append(f"expected a step (a table), got {table!r} @ {at}")
            continue
        fields = {}
        for name, field_value in table.items():
            if name not in _STEP_DEFAULTS:
                problems.append(f"extra field {name!r} @ {at}")
                continue
            fields[name] = _step_field(name, field_value, f"{at}.{name}", problems)
        steps.append(Step(**fields))
    return tuple(steps)


def _script(data: dict[str, Any], problems: list[str]) -> Script:
    """The script in ``data`` (parsed TOML), every problem noted with where it is."""
    by_kind: dict[str, tuple[Step, ...]] = {}
    default: tuple[Step, ...] = ()
    hats: dict[str, tuple[Step, ...]] = {}
    for key, value in data.items():
        if key == "default":
            default = _steps(value, "$.default", problems)
        elif key in _KINDS:
            by_kind[key] = _steps(value, f"$.{key}", problems)
        elif key == "hats" and type(value) is dict:
            hats = {n: _steps(v, f"$.hats.{n}", problems) for n, v in value.items()}
        elif key == "hats":
            problems.append(f"expected a table of hats, got {value!r} @ $.hats")
        else:
            problems.append(f"extra field {key!r} @ $")
    return Script(by_kind, default, hats)


def load_script(path: Path) -> Script:
    """The script at ``path``; raises ValueError with a one-line message when it is malformed."""
    try:
        data = tomllib.loads(path.read_text("utf-8"))
    except OSError as error:
        raise ValueError(f"cannot read the script {path}: {error.strerror}") from error
    except tomllib.TOMLDecodeError as error:
        raise ValueError(f"{path}: not valid TOML: {error}") from error
    problems: list[str] = []
    script = _script(data, problems)
    if problems:
        raise ValueError(f"{path}: " + "; ".join(problems))
    return script


def _next_step(script: Script, script_path: Path, kind: str, root: Path, hat: str) -> Step | None:
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
        from pipeline.handlers.intake import emit, emit_target

        events_file, _fallback = emit_target(Path.cwd(), os.environ)
        # The same function as `ralph emit`, called in-process: one O_APPEND write per line.
        for topic, payload in step.emit:
            emit(events_file, topic, payload)
        with events_file.open("ab") as handle:
            for line in step.raw_lines:
                handle.write(line.encode() + b"\n")
    if step.spawn:
        import subprocess  # here only: most steps start nothing

        subprocess.Popen(list(step.spawn), stdin=subprocess.DEVNULL)  # left running on purpose
    if step.print:
        sys.stdout.write(step.print + "\n")
        sys.stdout.flush()
    if step.delay_s:
        time.sleep(step.delay_s)
    while step.hang:
        time.sleep(3600)
    return step.exit


def _outside(path: Path, root: Path) -> str:
    """What to add when the script lies outside the workspace: in ralph's sandbox an agent
    sees its workspace only, so a script elsewhere is not there for it."""
    if not path.is_absolute() or path.is_relative_to(root):
        return ""
    return (
        f" (it is outside the workspace {root}; with ralph's sandbox on, an agent sees only "
        "the workspace: put the script in it, e.g. under .ralph/)"
    )


def main(argv: list[str] | None = None) -> int:
    """Run one invocation of the script named in ``argv``; returns the exit status."""
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        sys.stderr.write("usage: python -m pipeline.app.agents.scripted SCRIPT\n")
        return 2
    root = Path(os.environ.get("RALPH_WORKSPACE_ROOT") or Path.cwd())
    try:
        script = load_script(Path(args[0]))
    except ValueError as error:
        sys.stderr.write(f"scripted agent: {error}{_outside(Path(args[0]), root)}\n")
        return 2
    kind = os.environ.get("RALPH_PROMPT_KIND", "default")
    hat = os.environ.get("RALPH_HAT", "")
    step = _next_step(script, Path(args[0]), kind, root, hat)
    if step is None:
        return 0
    return _perform(step, root)


if __name__ == "__main__":
    sys.exit(main())
