"""Memories and tasks: notes of the context book folded into a run's state, and an agent's
``ralph memory`` / ``ralph task`` topics read as notes (pure).

A note that cannot apply (a task that does not exist, a memory over its bound, an id taken,
an agent touching what only a person may) changes nothing. One the run's own agent published
is refused with a notice in its next prompt; one the book gave (a person's, or another run's)
is passed over, since the book's writers checked it against the book as they saw it and the
fold keeps the first note that applies. :func:`fold_notes` is the same fold for people
reading the book (``ralph memory list``).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Final, assert_never

from attrs import evolve

from pipeline.core._note_rules import ID_PATTERN
from pipeline.core.state import (
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
from pipeline.events import (
    CONTEXT_TOPICS,
    ContextEvent,
    ContextNote,
    ContextNoted,
    NoteKind,
    RunId,
    TopicPublished,
)
from pipeline.reducers._build import advance

__all__ = [
    "agent_note",
    "applied",
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
    """``context`` with ``note`` applied, or why it cannot apply (then nothing changes).

    Who wrote the note counts (``note.by``, which ralph sets, never the note's text): people's
    and agents' memories and tasks are bounded apart, so agents' notes never crowd out a
    person's; a person's memory is only a person's to remove, and a person's task only a
    person's to mark done or blocked, or to open again. A person adding a memory or task an
    agent has already (the same text, so the same id) makes it the person's.
    """
    problem = note_problem(note)
    if problem is not None:
        return problem
    kind, subject = note.kind, note.subject
    by_person = note.by == PERSON
    match kind:
        case NoteKind.MEMORY_ADDED:
            return _memory_added(context, note, by_person)
        case NoteKind.MEMORY_REMOVED:
            memory = next((m for m in context.memories if m.memory_id == subject), None)
            if memory is None:
                return f"no memory {subject}"
            if memory.by_person and not by_person:
                return f"memory {subject} is a person's: only a person removes it"
            kept = tuple(m for m in context.memories if m.memory_id != subject)
            return evolve(context, memories=kept)
        case NoteKind.TASK_ADDED:
            return _task_added(context, note, by_person)
        case NoteKind.TASK_STARTED | NoteKind.TASK_DONE | NoteKind.TASK_BLOCKED:
            return _moved(context, note, _MOVES[kind], by_person)
        case _:
            assert_never(kind)


def _written_in(note: ContextNote) -> RunId | None:
    """The run whose agent wrote ``note`` (None: a person's), from the uid
    :func:`agent_note` gives it (``<run id>:<events-file line>``)."""
    if note.by == PERSON:
        return None
    run, colon, _line = note.uid.rpartition(":")
    return RunId(run) if colon and run else None


def _memory_added(context: Context, note: ContextNote, by_person: bool) -> Context | str:
    subject = note.subject
    existing = next((m for m in context.memories if m.memory_id == subject), None)
    memories = context.memories
    if existing is not None:
        if not by_person or existing.by_person:
            return f"a memory {subject} exists already"
        # A person keeping what an agent kept makes it the person's.
        memories = tuple(m for m in memories if m.memory_id != subject)
    side = [i for i, m in enumerate(memories) if m.by_person == by_person]
    if len(side) >= MAX_MEMORIES:
        if by_person:
            return f"the workspace keeps {MAX_MEMORIES} people's memories; remove one first"
        # Agents may remove any agent's memory: dropping their oldest gives them nothing new,
        # and an unattended loop never stops learning because old notes piled up.
        oldest = side[0]
        memories = (*memories[:oldest], *memories[oldest + 1 :])
    text, tags, written = note.text.strip(), note.tags, note.written_at
    memory = Memory(
        memory_id=subject,
        text=text,
        tags=tags,
        by=note.by,
        written_at=written,
        run=_written_in(note),
    )
    return evolve(context, memories=(*memories, memory))


def _task_added(context: Context, note: ContextNote, by_person: bool) -> Context | str:
    subject = note.subject
    existing = next((t for t in context.tasks if t.task_id == subject), None)
    if existing is not None and (not by_person or existing.by_person):
        if existing.status is not TaskStatus.DONE:
            return f"a task {subject} exists already"
        if existing.by_person and not by_person:
            return f"task {subject} is a person's and done: only a person opens it again"
    # A done task added again (a later run's plan repeats a step) is open again; a person
    # adding an agent's task makes it the person's.
    tasks = tuple(t for t in context.tasks if t.task_id != subject)
    side = [i for i, t in enumerate(tasks) if t.by_person == by_person]
    if len(side) >= MAX_TASKS:
        # Its side's oldest done task makes room; open ones are never dropped.
        done = next((i for i in side if tasks[i].status is TaskStatus.DONE), None)
        if done is None:
            who = "people's" if by_person else "agents'"
            return f"the workspace keeps {MAX_TASKS} {who} tasks not done; finish one first"
        tasks = (*tasks[:done], *tasks[done + 1 :])
    task = Task(
        task_id=subject,
        title=note.text.strip(),
        status=TaskStatus.OPEN,
        by=note.by,
        run=_written_in(note),
    )
    return evolve(context, tasks=(*tasks, task))


def _moved(
    context: Context, note: ContextNote, status: TaskStatus, by_person: bool
) -> Context | str:
    """The task ``note`` names moved to ``status``: any task not done yet may move, but only
    a person marks a person's task done or blocked, or starts one a person blocked."""
    for index, task in enumerate(context.tasks):
        if task.task_id != note.subject:
            continue
        if task.status is TaskStatus.DONE:
            return f"task {task.task_id} is done already"
        if task.by_person and not by_person:
            if status is not TaskStatus.STARTED:
                return f"task {task.task_id} is a person's: only a person marks it {status}"
            if task.status is TaskStatus.BLOCKED:
                return f"task {task.task_id} is a person's and blocked: only a person starts it"
        moved = evolve(task, status=status, reason=note.text.strip())
        return evolve(context, tasks=(*context.tasks[:index], moved, *context.tasks[index + 1 :]))
    return f"no task {note.subject}"


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
    # The uid names the run (:func:`_written_in` reads it back for the prompt's label).
    uid = f"{run.run_id}:{event.line_number}"
    kind = CONTEXT_TOPICS[event.topic]
    return ContextNote(
        uid=uid, kind=kind, subject=subject, text=text, tags=strings, by=by, written_at=event.at
    )
