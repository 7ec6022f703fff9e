"""Memories and tasks: notes of the context book folded into a run's state, and an agent's
``ralph memory`` / ``ralph task`` topics read as notes (pure).

A note that cannot apply (a task that does not exist, a memory over its bound, an id taken)
changes nothing. One the run's own agent published is refused with a notice in its next
prompt; one the book gave (a person's, or another run's) is passed over, since the book's
writers checked it against the book as they saw it and the fold keeps the first note that
applies. :func:`fold_notes` is the same fold for people reading the book (``ralph memory
list``).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Final, assert_never

from attrs import evolve

from pipeline._note_rules import ID_PATTERN
from pipeline.events import (
    CONTEXT_TOPICS,
    ContextEvent,
    ContextNote,
    ContextNoted,
    NoteKind,
    TopicPublished,
)
from pipeline.reducers._build import advance
from pipeline.state import (
    MAX_MEMORIES,
    MAX_MEMORY_CHARS,
    MAX_TAG_CHARS,
    MAX_TAGS,
    MAX_TASKS,
    MAX_TITLE_CHARS,
    PERSON,
    Context,
    Memory,
    PipelineState,
    Task,
    TaskStatus,
)

__all__ = [
    "agent_note",
    "applied",
    "applied_for_agent",
    "fold_notes",
    "note_problem",
    "reduce_context",
]


_TEXT_BOUND: Final = {
    NoteKind.MEMORY_ADDED: MAX_MEMORY_CHARS,
    NoteKind.TASK_ADDED: MAX_TITLE_CHARS,
    NoteKind.TASK_BLOCKED: MAX_TITLE_CHARS,
}
"""The kinds whose note carries a text, and its bound in characters."""

_NEEDS_TEXT: Final = frozenset({NoteKind.MEMORY_ADDED, NoteKind.TASK_ADDED})

_MOVES: Final = {
    NoteKind.TASK_STARTED: TaskStatus.STARTED,
    NoteKind.TASK_DONE: TaskStatus.DONE,
    NoteKind.TASK_BLOCKED: TaskStatus.BLOCKED,
}


def note_problem(note: ContextNote) -> str | None:
    """Why ``note`` is malformed whatever the book holds (None: well formed)."""
    if not ID_PATTERN.fullmatch(note.subject):
        return f"the id {note.subject!r} is not 1 to 40 letters, digits and . _ -"
    bound = _TEXT_BOUND.get(note.kind)
    if bound is None and note.text:
        return f"a {note.kind.value} note carries no text"
    if bound is not None and len(note.text) > bound:
        return f"the text is {len(note.text)} characters; at most {bound} are kept"
    if note.kind in _NEEDS_TEXT and not note.text.strip():
        return "the text is empty"
    if note.tags and note.kind is not NoteKind.MEMORY_ADDED:
        return "only a memory has tags"
    if len(note.tags) > MAX_TAGS:
        return f"{len(note.tags)} tags; at most {MAX_TAGS}"
    for tag in note.tags:
        if len(tag) > MAX_TAG_CHARS or not ID_PATTERN.fullmatch(tag):
            return f"the tag {tag!r} is not 1 to 40 letters, digits and . _ -"
    return None


def applied(context: Context, note: ContextNote) -> Context | str:
    """``context`` with ``note`` applied, or why it cannot apply (then nothing changes)."""
    problem = note_problem(note)
    if problem is not None:
        return problem
    kind, subject = note.kind, note.subject
    match kind:
        case NoteKind.MEMORY_ADDED:
            if any(m.memory_id == subject for m in context.memories):
                return f"a memory {subject} exists already"
            if len(context.memories) >= MAX_MEMORIES:
                return f"the workspace keeps {MAX_MEMORIES} memories; remove one first"
            memory = Memory(subject, note.text.strip(), note.tags, note.by, note.written_at)
            return evolve(context, memories=(*context.memories, memory))
        case NoteKind.MEMORY_REMOVED:
            kept = tuple(m for m in context.memories if m.memory_id != subject)
            if len(kept) == len(context.memories):
                return f"no memory {subject}"
            return evolve(context, memories=kept)
        case NoteKind.TASK_ADDED:
            existing = next((t for t in context.tasks if t.task_id == subject), None)
            if existing is not None and existing.status is not TaskStatus.DONE:
                return f"a task {subject} exists already"
            # A done task added again (a later run's plan repeats a step) is open again.
            tasks = tuple(t for t in context.tasks if t.task_id != subject)
            if len(tasks) >= MAX_TASKS:
                # The oldest done task makes room; open ones are never dropped.
                done = next((i for i, t in enumerate(tasks) if t.status is TaskStatus.DONE), None)
                if done is None:
                    return f"the workspace keeps {MAX_TASKS} tasks not done; finish one first"
                tasks = (*tasks[:done], *tasks[done + 1 :])
            task = Task(subject, note.text.strip(), TaskStatus.OPEN, note.by)
            return evolve(context, tasks=(*tasks, task))
        case NoteKind.TASK_STARTED | NoteKind.TASK_DONE | NoteKind.TASK_BLOCKED:
            return _moved(context, note, _MOVES[kind])
        case _:
            assert_never(kind)


def _moved(context: Context, note: ContextNote, status: TaskStatus) -> Context | str:
    """The task ``note`` names moved to ``status``: any task not done yet may move."""
    for index, task in enumerate(context.tasks):
        if task.task_id != note.subject:
            continue
        if task.status is TaskStatus.DONE:
            return f"task {task.task_id} is done already"
        moved = evolve(task, status=status, reason=note.text.strip())
        return evolve(context, tasks=(*context.tasks[:index], moved, *context.tasks[index + 1 :]))
    return f"no task {note.subject}"


def applied_for_agent(context: Context, note: ContextNote) -> Context | str:
    """:func:`applied` for a note an agent published: a person's memory is the person's to
    remove, never an agent's."""
    if note.kind is NoteKind.MEMORY_REMOVED:
        memory = next((m for m in context.memories if m.memory_id == note.subject), None)
        if memory is not None and memory.by == PERSON:
            return f"memory {note.subject} is a person's: only a person removes it"
    return applied(context, note)


def fold_notes(notes: Iterable[ContextNote], context: Context | None = None) -> Context:
    """The memories and tasks ``notes`` make, in order (a note that cannot apply is passed
    over, as a run passes over the book's)."""
    current = Context() if context is None else context
    for note in notes:
        result = applied(current, note)
        if not isinstance(result, str):
            current = result
    return current


def reduce_context(state: PipelineState, event: ContextEvent) -> PipelineState:
    """Fold one context fact into ``state``: a book note taken in."""
    match event:
        case ContextNoted(number=number, note=note):
            context = state.context
            if number <= context.seen:
                return advance(state)
            unfiled = tuple(n for n in context.unfiled if n.uid != note.uid)
            if len(unfiled) < len(context.unfiled):
                # The run's own note, back from the book: applied when it was published.
                return advance(state, context=evolve(context, seen=number, unfiled=unfiled))
            result = applied(context, note)
            kept = context if isinstance(result, str) else result
            return advance(state, context=evolve(kept, seen=number))
        case _:
            assert_never(event)


def agent_note(state: PipelineState, event: TopicPublished) -> ContextNote | str:
    """The note an agent's ``ralph memory``/``ralph task`` topic (one of
    :data:`CONTEXT_TOPICS`) makes, or why it makes none."""
    run = state.run
    assert run is not None, "reduce lets topics into started runs only"
    payload = event.payload.value
    if not isinstance(payload, dict):
        return "the payload is not a JSON object (use `ralph memory` or `ralph task`)"
    subject, text, tags = payload.get("id"), payload.get("text", ""), payload.get("tags", [])
    if not isinstance(subject, str) or not isinstance(text, str):
        return 'the payload needs "id" and "text" as strings'
    strings = tuple(tag for tag in tags if isinstance(tag, str)) if isinstance(tags, list) else ()
    if not isinstance(tags, list) or len(strings) != len(tags):
        return '"tags" must be a list of strings'
    working, publisher = state.routing.hat, state.intake.publisher
    by = working or (publisher.value if publisher is not None else "agent")
    if by == PERSON:
        by = f"hat {by}"  # a hat named person does not write as a person
    uid = f"{run.run_id}:{event.line_number}"
    kind = CONTEXT_TOPICS[event.topic]
    return ContextNote(uid, kind, subject, text, strings, by, event.at)
