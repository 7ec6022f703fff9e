"""``ralph memory`` and ``ralph task`` as an agent runs them (``RALPH_EVENTS_FILE`` set):
kept lean like ``ralph emit``, since an agent runs one per note. Each writes one topic to the
run's events file (``ralph.memory.add`` and so on, with a JSON object); the run judges it when
the agent's turn ends, applies it, and files it in the workspace's context book. A refused
note comes back as a notice in the agent's next prompt.

People run the same commands without ``RALPH_EVENTS_FILE``: those go to the typer commands,
which write the book in the store directly (``_context_commands``).
"""

from __future__ import annotations

import sys

from pipeline.app.cli._emit import emitted, lean_parser, say
from pipeline.core._note_rules import (
    ID_PATTERN,
    MAX_MEMORY_CHARS,
    MAX_TAG_CHARS,
    MAX_TAGS,
    MAX_TITLE_CHARS,
    new_id,
)
from pipeline.handlers.intake._emit import EmitError

TYPE_CHECKING = False
if TYPE_CHECKING:
    import argparse
    from typing import Any, Final

__all__ = ["AGENT_VERBS", "main", "note_topic"]

AGENT_VERBS: Final = {
    "memory": ("add", "remove", "list"),
    "task": ("add", "start", "done", "block", "list"),
}
"""The verbs an agent's call takes: its notes go to its run; a listing points to its prompt."""

LISTED_IN_THE_PROMPT: Final = (
    "Your prompt's 'Memories and tasks' section lists the memories and the tasks not done; "
    "notes you make now reach it from your next prompt. (The workspace's book is not for "
    "agents to read: a person lists it with `ralph memory list` or `ralph task list`.)"
)

_USAGE_ERROR: Final = 2


def _parser(group: str) -> argparse.ArgumentParser:
    parser = lean_parser(f"ralph {group}")
    verbs = parser.add_subparsers(dest="verb", required=True)
    if group == "memory":
        add = verbs.add_parser("add", help="Keep TEXT for later prompts and runs.")
        add.add_argument("text")
        add.add_argument("--tag", action="append", default=[], help="Only for this hat.")
        verbs.add_parser("remove", help="Forget memory ID.").add_argument("id")
    else:
        verbs.add_parser("add", help="Add a task titled TITLE.").add_argument("title")
        verbs.add_parser("start", help="Start task ID.").add_argument("id")
        verbs.add_parser("done", help="Mark task ID done.").add_argument("id")
        block = verbs.add_parser("block", help="Mark task ID blocked.")
        block.add_argument("id")
        block.add_argument("--reason", default="", help="Why it is blocked.")
    return parser


def _plain(group: str, argv: list[str]) -> argparse.Namespace | None:
    """``argv`` read without argparse when it is a plain shape (a verb and its one value, no
    option), as agents mostly call it: importing and building argparse is a third of the
    command. None for anything else, which argparse reads and words."""
    import types

    if len(argv) != 2 or any(item.startswith("-") for item in argv):
        return None
    verb, value = argv
    fields: dict[str, object] | None = None
    if group == "memory":
        if verb == "add":
            fields = {"text": value, "tag": []}
        elif verb == "remove":
            fields = {"id": value}
    elif verb == "add":
        fields = {"title": value}
    elif verb in ("start", "done"):
        fields = {"id": value}
    elif verb == "block":
        fields = {"id": value, "reason": ""}
    return None if fields is None else types.SimpleNamespace(verb=verb, **fields)  # type: ignore[return-value]


def _checked_id(value: str) -> str:
    if not ID_PATTERN.fullmatch(value):
        raise EmitError(f"{value!r} is not an id: 1 to 40 letters, digits and . _ -")
    return value


def _checked_text(value: str, bound: int, what: str, *, required: bool = True) -> str:
    text = value.strip()
    if required and not text:
        raise EmitError(f"the {what} is empty")
    if len(text) > bound:
        raise EmitError(f"the {what} is {len(text)} characters; at most {bound} are kept")
    return text


def note_topic(group: str, verb: str, **values: Any) -> tuple[str, dict[str, object], str]:
    """The topic, its payload and what to say, for an agent's note: ``group`` is ``memory``
    or ``task``, ``values`` what its verb takes (``text`` and ``tag``, ``title``, ``id``,
    ``reason``), as ``ralph memory``/``ralph task`` and ralph's MCP server read them.
    :class:`EmitError` says what is wrong with a value."""
    if verb == "add":
        if group == "memory":
            text = _checked_text(values["text"], MAX_MEMORY_CHARS, "memory")
            tags = [_checked_id(tag) for tag in values.get("tag", ())]
            if len(tags) > MAX_TAGS or any(len(tag) > MAX_TAG_CHARS for tag in tags):
                raise EmitError(f"at most {MAX_TAGS} tags")
            memory = new_id("m", text)
            payload: dict[str, object] = {"id": memory, "text": text, "tags": tags}
            return "ralph.memory.add", payload, f"Memory {memory} kept."
        title = _checked_text(values["title"], MAX_TITLE_CHARS, "title")
        task = new_id("t", title)
        return "ralph.task.add", {"id": task, "text": title}, f"Task {task} added."
    subject = _checked_id(values["id"])
    if group == "memory":
        return "ralph.memory.remove", {"id": subject}, f"Memory {subject} removed."
    if verb == "block":
        reason = _checked_text(values.get("reason", ""), MAX_TITLE_CHARS, "reason", required=False)
        return "ralph.task.block", {"id": subject, "text": reason}, f"Task {subject} blocked."
    return f"ralph.task.{verb}", {"id": subject}, f"Task {subject} {verb}."


def main(group: str, argv: list[str]) -> int:
    """Run ``ralph GROUP ARGV`` for an agent; the exit status: 0 written, 1 the events file is
    unsafe to write, 2 bad input, 4 a full disk."""
    import json

    if argv[:1] == ["list"]:
        sys.stdout.write(LISTED_IN_THE_PROMPT + "\n")
        return 0
    arguments = _plain(group, argv) or _parser(group).parse_args(argv)
    try:
        topic, payload, done = note_topic(group, **vars(arguments))
    except EmitError as error:
        say(f"error: {error}")
        return _USAGE_ERROR
    return emitted(topic, lambda: json.dumps(payload), as_json=True, done=done)
