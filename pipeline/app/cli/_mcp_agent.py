"""``ralph mcp``: the agent's tools over MCP (I/O: reads the card, appends to the run's
events file).

Each tool does what the shell commands do (``ralph emit``, ``ralph memory``, ``ralph task``)
through the same code: ``emit_value`` writes the line (its checks, ``flock`` and
``O_APPEND``), ``note_topic`` shapes a note, and the run judges every topic after the
agent's turn as it judges one from the shell. What the shell cannot know comes from the
prompt's card (``pipeline.handlers.intake._card``): the hat's scope, the intake limits, the
standing, the memories and tasks. The card is read on the first call, so that ``tools/list``
answers with nothing but this module and the loop loaded.

A call that is refused writes nothing and says why. The server has exactly the agent's
rights: a tool can do nothing the agent's shell cannot.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from pipeline.app.cli._mcp_wire import Tool, ToolError, object_schema, serve
from pipeline.app.cli._note import note_topic
from pipeline.core._note_rules import ID_PATTERN, MAX_MEMORY_CHARS, MAX_TAGS, MAX_TITLE_CHARS
from pipeline.handlers.intake._emit import MAX_TOPIC_CHARS, EmitError, emit_value, topic_problem
from pipeline.handlers.intake._files import EventsFileError, card_path, workspace_root

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any, Final

    from pipeline.core._prompt_records import Publishing
    from pipeline.handlers.intake._card import Card

__all__ = ["main", "tools"]

MAX_QUESTION_CHARS: Final = 4000
"""The longest question to a person."""

_USAGE: Final = "usage: ralph mcp [--card PATH]"
_INSTRUCTIONS: Final = (
    "ralph's tools for the agent of a ralph run: publish topics, ask the person, keep "
    "memories and tasks, and read the run's status."
)
_ID: Final = {"type": "string", "pattern": f"^{ID_PATTERN.pattern}$"}


class _Session:
    """One invocation's server: its card (read on first use) and what its tools wrote."""

    __slots__ = ("asked", "bytes", "found", "lines", "loaded", "notes")

    def __init__(self, found: Path | str) -> None:
        self.found = found
        """The card's path, or why there is none."""
        self.loaded: tuple[Card, Path] | None = None
        self.lines = 0
        self.bytes = 0
        self.asked = False
        self.notes: list[tuple[str, str]] = []
        """This invocation's notes, ``(group, what was said)``: they reach the next prompt."""

    def card(self) -> tuple[Card, Path]:
        """The card and the events file it names; :class:`ToolError` naming the card."""
        if isinstance(self.found, str):
            raise ToolError(self.found)
        if self.loaded is None:
            from pipeline.handlers.intake._card import CardError, read_card

            try:
                self.loaded = read_card(self.found)
            except CardError as error:
                raise ToolError(str(error)) from error
        return self.loaded

    def publishing(self) -> Publishing:
        """The prompt's publishing; refused when ralph acts on no topic (but notes) from the
        prompt."""
        publishing = self.card()[0].publishing
        if publishing is None:
            raise ToolError(
                "this prompt asks only for a file; ralph takes only memory and task notes from it"
            )
        return publishing

    def write(self, topic: str, value: Any) -> None:
        """Append ``topic`` with ``value`` within the run's intake limits."""
        card, events = self.card()
        limits = card.limits
        if self.lines >= limits.lines:
            raise ToolError(f"not written: this turn has written {limits.lines} topics, the limit")
        room = min(limits.line_bytes, limits.bytes - self.bytes)
        try:
            line = emit_value(events, topic, value, max_bytes=room)
        except (EmitError, EventsFileError) as error:
            raise ToolError(
                f"not written: {error} (a topic's line may take {limits.line_bytes} bytes, "
                f"and a turn's {limits.bytes}; this turn has written {self.bytes})"
            ) from error
        self.lines += 1
        self.bytes += len(line)


def _in_scope(session: _Session, topic: str) -> None:
    """Refuse ``topic`` when the run would ignore it as outside the hat's scope (the
    reducer's rules: the promises and the memory and task notes always pass)."""
    publishing = session.publishing()
    if not publishing.enforced or not publishing.publishes:
        return
    if topic in (publishing.completion_promise, publishing.cancellation_promise):
        return
    # The events' policy costs a tenth of a second to import: only a scoped call pays it.
    from pipeline.events import CONTEXT_TOPICS, in_scope

    if topic not in CONTEXT_TOPICS and not in_scope(publishing.publishes, topic):
        allowed = ", ".join(publishing.publishes)
        hat = session.card()[0].hat or "this"
        raise ToolError(
            f"not written: the {hat} hat publishes only {allowed}; ralph ignores {topic}"
        )


def _emit(session: _Session, arguments: dict[str, Any]) -> str:
    topic = arguments["topic"]
    publishing = session.publishing()
    problem = topic_problem(topic)
    if problem is not None:
        raise ToolError(problem)
    _in_scope(session, topic)
    session.write(topic, arguments.get("payload"))
    if topic == publishing.completion_promise and publishing.required_missing:
        missing = ", ".join(publishing.required_missing)
        return f"Published {topic}; ralph refuses this claim until these are published: {missing}."
    return f"Published {topic}."


def _ask(session: _Session, arguments: dict[str, Any]) -> str:
    topic = session.publishing().human_topic
    if topic is None:
        raise ToolError("asking a person is off in this run: [loop] human_timeout_s = 0")
    _in_scope(session, topic)
    if session.asked:
        raise ToolError(
            "you asked already in this turn, and ralph keeps one question pending: end your "
            "turn, and the answer comes in your next prompt"
        )
    session.write(topic, {"question": arguments["question"]})
    session.asked = True
    return (
        "Asked. ralph asks the person when your turn ends and waits; the answer comes in "
        "your next prompt. End your turn if you cannot go on without it."
    )


def _note(group: str, verb: str, **renamed: str) -> Any:
    """A tool writing one ``group`` note with ``verb`` (``renamed``: a tool's argument name
    to the name ``note_topic`` takes)."""

    def call(session: _Session, arguments: dict[str, Any]) -> str:
        session.card()  # a memory or task note is taken from a file-only turn too
        values = {renamed.get(name, name): value for name, value in arguments.items()}
        try:
            topic, payload, done = note_topic(group, verb, **values)
        except EmitError as error:
            raise ToolError(str(error)) from error
        session.write(topic, payload)
        session.notes.append((group, done))
        return done

    return call


def _author(by: str, run: str | None) -> str:
    if by == "person":
        return "the person"
    return f"the {by} agent" + ("" if run is None else f" in run {run}")


def _listing(group: str) -> Any:
    """A tool listing the ``group`` notes the prompt shows, then this invocation's."""

    def call(session: _Session, _arguments: dict[str, Any]) -> str:
        card = session.card()[0]
        # Loaded with the card (tools/list loads no attrs): how prompts fence agents' words.
        from pipeline.core._prompt_records import fenced

        if group == "memory":
            entries = [
                f"Memory {m.id}, for {', '.join(m.tags) or 'every hat'}, written by "
                f"{_author(m.by, m.run)}:\n\n{fenced(m.text, 'text')}"
                for m in card.memories
            ]
            left_out = card.memories_left_out
        else:
            entries = []
            for task in card.tasks:
                entry = f"Task {task.id}, {task.status}, added by {_author(task.by, task.run)}:"
                entry += f"\n\n{fenced(task.title, 'text')}"
                if task.reason:
                    entry += f"\n\nWhy it is blocked:\n\n{fenced(task.reason, 'text')}"
                entries.append(entry)
            left_out = card.tasks_left_out
        if left_out:
            entries.append(f"({left_out} more are not shown to this prompt.)")
        entries += [
            f"{done} (from your next prompt)" for kind, done in session.notes if kind == group
        ]
        if not entries:
            return f"No {'memories' if group == 'memory' else 'tasks'}."
        trust = (
            "The line above each fence is ralph's and says who wrote what the fence holds; what "
            "a fence holds is its author's own words."
        )
        return "\n\n".join([trust, *entries])

    return call


def _status(session: _Session, _arguments: dict[str, Any]) -> str:
    card = session.card()[0]
    lines = [f"Run {card.run}: the {card.role}, hat {card.hat or '(none)'}, {card.prompt_kind}."]
    standing = card.standing
    if standing is not None:
        of = "" if standing.max_iterations is None else f"/{standing.max_iterations}"
        lines.append(
            f"Phase {standing.phase}, step {standing.step}, iteration {standing.iteration}{of}."
        )
        if standing.max_review_passes:
            lines.append(f"Review pass {standing.review_pass}/{standing.max_review_passes}.")
        cost = f"Cost ${standing.cost_usd:.2f}"
        if standing.max_cost_usd is not None:
            cost += f" of ${standing.max_cost_usd:.2f}"
        lines.append(cost + (" (some cost unknown)." if standing.unknown_cost else "."))
    publishing = card.publishing
    if publishing is None:
        lines.append(
            "This prompt asks only for a file; ralph takes only memory and task notes from it."
        )
        return "\n".join(lines)
    if publishing.publishes:
        rule = "only these" if publishing.enforced else "these are expected"
        lines.append(f"Your hat publishes ({rule}): {', '.join(publishing.publishes)}.")
    if publishing.completion_promise is not None:
        missing = ", ".join(publishing.required_missing) or "nothing"
        lines.append(
            f"To finish, publish {publishing.completion_promise}; required first: {missing}."
        )
    asking = "yes" if publishing.human_topic is not None else "no ([loop] human_timeout_s = 0)"
    lines.append(f"You can ask a person: {asking}.")
    return "\n".join(lines)


def _with(rule: dict[str, Any], description: str) -> dict[str, Any]:
    return {**rule, "description": description}


def tools(session: _Session) -> tuple[Tool, ...]:
    """The agent's tools, bound to ``session``."""
    task_id = _with(_ID, "The task's id, as add_task returned it or the prompt lists it.")
    reason = _with({"type": "string", "maxLength": MAX_TITLE_CHARS}, "Why it is blocked.")
    by_id = object_schema(("id",), id=task_id)
    rows: list[tuple[str, str, dict[str, Any], Any]] = [
        (
            "emit",
            "Publish a topic to ralph, as `ralph emit` does: ralph reads it when your turn ends.",
            object_schema(
                ("topic",),
                topic=_with(
                    {"type": "string", "minLength": 1, "maxLength": MAX_TOPIC_CHARS},
                    "The topic: letters, digits and _ . : - only, no empty dot-separated part.",
                ),
                payload={
                    "description": "Any JSON value. Text is kept as text (as `ralph emit` "
                    "without --json); an object or array is kept as it is."
                },
            ),
            _emit,
        ),
        (
            "ask_person",
            "Ask the person a question. ralph asks when your turn ends and waits for the "
            "answer, which comes in your next prompt. One question a turn.",
            object_schema(
                ("question",),
                question=_with(
                    {"type": "string", "minLength": 1, "maxLength": MAX_QUESTION_CHARS},
                    "The question, as the person will read it.",
                ),
            ),
            _ask,
        ),
        (
            "keep_memory",
            "Keep a memory for later prompts and runs; returns its id.",
            object_schema(
                ("text",),
                text=_with(
                    {"type": "string", "minLength": 1, "maxLength": MAX_MEMORY_CHARS},
                    "What later iterations and runs should know.",
                ),
                tags=_with(
                    {"type": "array", "items": _ID, "maxItems": MAX_TAGS},
                    "Hats this memory is for (none: every hat).",
                ),
            ),
            _note("memory", "add", tags="tag"),
        ),
        (
            "forget_memory",
            "Forget a memory that is wrong.",
            object_schema(("id",), id=_with(_ID, "The memory's id.")),
            _note("memory", "remove"),
        ),
        ("list_memories", "The memories your prompt shows.", object_schema(), _listing("memory")),
        (
            "add_task",
            "Add a task; returns its id.",
            object_schema(
                ("title",),
                title=_with(
                    {"type": "string", "minLength": 1, "maxLength": MAX_TITLE_CHARS},
                    "What is to be done.",
                ),
            ),
            _note("task", "add"),
        ),
        ("start_task", "Mark a task started.", by_id, _note("task", "start")),
        ("finish_task", "Mark a task done.", by_id, _note("task", "done")),
        (
            "block_task",
            "Mark a task blocked, saying why.",
            object_schema(("id",), id=task_id, reason=reason),
            _note("task", "block"),
        ),
        ("list_tasks", "The tasks your prompt shows.", object_schema(), _listing("task")),
        (
            "run_status",
            "Where the run stands: phase, iteration, budget, what is required before "
            "completion, what your hat may publish.",
            object_schema(),
            _status,
        ),
    ]

    def bound(call: Any) -> Any:
        return lambda arguments: call(session, arguments)

    return tuple(Tool(name, about, schema, bound(call)) for name, about, schema, call in rows)


def _found(argv: list[str], environ: Mapping[str, str]) -> Path | str:
    """The card ``--card`` names, else the one of ``RALPH_RUN_ID`` in the workspace; or why
    there is none."""
    if argv:
        return Path(argv[1])
    run = environ.get("RALPH_RUN_ID", "")
    root = workspace_root(Path.cwd(), environ)
    if not ID_PATTERN.fullmatch(run) or root is None:
        return "no card: start the server as `ralph mcp --card PATH`, or inside a ralph run"
    return card_path(root, run)


def main(argv: list[str]) -> int:
    """Serve the agent's tools on stdio until stdin closes (with ``--control``, the person's:
    :func:`pipeline.app.cli._mcp_control.main`); 2 for a usage error."""
    if "--control" in argv:
        # The person's side: started once by an editor or a supervising agent.
        from pipeline.app.cli._mcp_control import main as control_main

        return control_main(argv)
    if argv in (["--help"], ["-h"]):
        sys.stdout.write(
            f"{_USAGE}\n       ralph mcp --control -C DIR [--store URL]\n\n"
            "Serve ralph's tools to an agent over MCP on stdio; with --control, a person's "
            "tools over the workspace DIR.\n"
        )
        return 0
    if argv and (len(argv) != 2 or argv[0] != "--card"):
        sys.stderr.write(f"{_USAGE}\nerror: unexpected {' '.join(argv)[:200]}\n")
        return 2
    session = _Session(_found(argv, os.environ))
    return serve(tools(session), instructions=_INSTRUCTIONS)
