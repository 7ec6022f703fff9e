"""Memories and tasks in the pure layers: the fold of notes (examples and hypothesis laws),
an agent's topics read as notes or refused with a notice, the book's notes taken in once,
the completion gate's wait for the tasks, and which memories and tasks a prompt carries."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import attrs
from hypothesis import given
from hypothesis import strategies as st

from pipeline.core.effects import MaterializePrompt
from pipeline.core.serialization import decode_state, encode_state
from pipeline.core.state import (
    MAX_MEMORIES,
    MAX_TASKS,
    PERSON,
    Context,
    Memory,
    PipelineState,
    Task,
    TaskStatus,
)
from pipeline.events import (
    ContextNote,
    ContextNoted,
    ContextPolicy,
    Count,
    Instant,
    Json,
    NoteKind,
    Ordinal,
    PlanningStarted,
    Role,
    TopicPublished,
)
from pipeline.orchestration import next_effect
from pipeline.orchestration._context import MAX_PROMPT_TASKS, MEMORY_OVERHEAD, prompt_context
from pipeline.reducers import fold, reduce
from pipeline.reducers.context import applied, fold_notes
from tests.reducers.test_loop_control import policy, started

T = Instant(datetime(2026, 11, 27, tzinfo=UTC))


def note(
    kind: NoteKind, subject: str, text: str = "", tags: tuple[str, ...] = (), by: str = "p"
) -> ContextNote:
    return ContextNote(
        uid=f"{kind}:{subject}:{text}",
        kind=kind,
        subject=subject,
        text=text,
        tags=tags,
        by=by,
        written_at=T,
    )


_lines = iter(range(1, 10**9))


def agent_topic(name: str, payload: object) -> TopicPublished:
    return TopicPublished(
        topic=name,
        payload=Json.of(payload),
        line_number=Ordinal(next(_lines)),
        emitted_at=None,
        at=T,
    )


def test_a_task_moves_until_it_is_done_and_unknown_ids_are_refused() -> None:
    context = fold_notes(
        [
            note(NoteKind.TASK_ADDED, "t-1", "Write it"),
            note(NoteKind.TASK_STARTED, "t-1"),
            note(NoteKind.TASK_BLOCKED, "t-1", "waiting on the API"),
        ]
    )
    (task,) = context.tasks
    assert (task.status, task.reason) == (TaskStatus.BLOCKED, "waiting on the API")
    done = applied(context, note(NoteKind.TASK_DONE, "t-1"))
    assert not isinstance(done, str)
    assert done.tasks[0].status is TaskStatus.DONE
    assert done.open_tasks() == ()
    assert applied(done, note(NoteKind.TASK_STARTED, "t-1")) == "task t-1 is done already"
    assert applied(done, note(NoteKind.TASK_DONE, "t-9")) == "no task t-9"
    assert applied(context, note(NoteKind.TASK_ADDED, "t-1", "again")) == (
        "a task t-1 exists already"
    )


def test_memories_are_added_once_and_removed_by_id() -> None:
    context = fold_notes([note(NoteKind.MEMORY_ADDED, "m-1", "  Use tabs  ", ("developer",))])
    (memory,) = context.memories
    assert (memory.text, memory.tags, memory.by) == ("Use tabs", ("developer",), "p")
    assert (
        applied(context, note(NoteKind.MEMORY_ADDED, "m-1", "x")) == "a memory m-1 exists already"
    )
    assert applied(context, note(NoteKind.MEMORY_REMOVED, "m-2")) == "no memory m-2"
    removed = applied(context, note(NoteKind.MEMORY_REMOVED, "m-1"))
    assert not isinstance(removed, str)
    assert removed.memories == ()


def test_malformed_notes_change_nothing_and_say_why() -> None:
    empty = Context()
    cases = {
        note(NoteKind.MEMORY_ADDED, "../x", "t"): "is not 1 to 40 letters",
        note(NoteKind.MEMORY_ADDED, "m-1", "   "): "the text is empty",
        note(NoteKind.MEMORY_ADDED, "m-1", "a" * 2001): "at most 2000 are kept",
        note(NoteKind.TASK_ADDED, "t-1", "t", ("tag",)): "only a memory has tags",
        note(NoteKind.MEMORY_ADDED, "m-1", "t", ("bad tag",)): "the tag 'bad tag'",
        note(NoteKind.MEMORY_ADDED, "m-1", "t", tuple(f"t{i}" for i in range(9))): "9 tags",
        note(NoteKind.TASK_DONE, "t-1", "why"): "carries no text",
    }
    for bad, why in cases.items():
        result = applied(empty, bad)
        assert isinstance(result, str), bad
        assert why in result, (bad, result)


def test_the_workspace_keeps_bounded_memories_and_drops_the_oldest_done_task() -> None:
    """Agents' memories past the bound drop the oldest agent's; a person's past theirs are
    refused; tasks past the bound drop the oldest done one."""
    memories = fold_notes(
        note(NoteKind.MEMORY_ADDED, f"m-{i}", "x") for i in range(MAX_MEMORIES + 5)
    )
    assert len(memories.memories) == MAX_MEMORIES
    assert memories.memories[0].memory_id == "m-5"
    people = fold_notes(
        note(NoteKind.MEMORY_ADDED, f"m-{i}", "x", by=PERSON) for i in range(MAX_MEMORIES)
    )
    full = applied(people, note(NoteKind.MEMORY_ADDED, "m-new", "x", by=PERSON))
    assert full == f"the workspace keeps {MAX_MEMORIES} people's memories; remove one first"
    tasks = fold_notes(note(NoteKind.TASK_ADDED, f"t-{i}", "x") for i in range(MAX_TASKS))
    assert isinstance(applied(tasks, note(NoteKind.TASK_ADDED, "t-new", "x")), str)
    tasks = fold_notes([note(NoteKind.TASK_DONE, "t-7")], tasks)
    room = applied(tasks, note(NoteKind.TASK_ADDED, "t-new", "x"))
    assert not isinstance(room, str)
    assert len(room.tasks) == MAX_TASKS
    assert "t-7" not in {t.task_id for t in room.tasks}
    assert room.tasks[-1].task_id == "t-new"


def _subjects() -> st.SearchStrategy[str]:
    return st.sampled_from(["m-1", "m-2", "t-1", "t-2", "../bad", ""])


@st.composite
def notes(draw: st.DrawFn) -> ContextNote:
    kind = draw(st.sampled_from(NoteKind))
    text = draw(st.sampled_from(["", "a memory", "  padded  ", "x" * 2100]))
    tags = draw(st.sampled_from([(), ("developer",), ("bad tag",)]))
    return ContextNote(
        uid=draw(st.text(max_size=4)),
        kind=kind,
        subject=draw(_subjects()),
        text=text,
        tags=tags,
        by="p",
        written_at=T,
    )


@given(st.lists(notes(), max_size=30))
def test_the_fold_is_deterministic_bounded_and_refusals_change_nothing(
    drawn: list[ContextNote],
) -> None:
    """Whatever notes come, in order: the same notes fold to the same context; every note
    either applies or leaves the context as it was; ids stay unique; texts stay bounded."""
    context = Context()
    for each in drawn:
        result = applied(context, each)
        if not isinstance(result, str):
            context = result
    assert context == fold_notes(drawn)
    assert len({m.memory_id for m in context.memories}) == len(context.memories)
    assert len({t.task_id for t in context.tasks}) == len(context.tasks)
    assert all(0 < len(m.text) <= 2000 for m in context.memories)


@given(st.lists(notes(), max_size=20), st.integers(min_value=0, max_value=20))
def test_taking_in_the_book_again_changes_nothing_and_the_state_round_trips(
    drawn: list[ContextNote], again: int
) -> None:
    """``ContextNoted`` facts numbered at or below what the run took are passed over: a book
    taken in twice folds as once; the state with its context round-trips through cattrs."""
    base = started(policy())
    facts = [ContextNoted(number=Ordinal(i + 1), note=n, at=T) for i, n in enumerate(drawn)]
    once = fold(facts, base)
    twice = fold(facts[:again], once)
    assert twice.context == once.context
    assert once.context == attrs.evolve(fold_notes(drawn), seen=len(drawn))
    assert decode_state(encode_state(once)) == once


def test_an_agents_note_applies_at_once_and_is_taken_off_when_the_book_gives_it_back() -> None:
    published = agent_topic("ralph.task.add", {"id": "t-1", "text": "Do"})
    state = reduce(started(policy()), published)
    (unfiled,) = state.context.unfiled
    # The uid names the run and the events-file line: unique in the book, the same on replay.
    assert unfiled.uid == f"r:{published.line_number}"
    assert (unfiled.by, unfiled.kind) == ("developer", NoteKind.TASK_ADDED)
    assert [t.title for t in state.context.tasks] == ["Do"]
    assert "ralph.task.add" in state.intake.seen_topics
    assert not state.intake.notices
    person = note(NoteKind.MEMORY_ADDED, "m-1", "From a person")
    back = fold(
        [
            ContextNoted(number=Ordinal(1), note=person, at=T),
            ContextNoted(number=Ordinal(2), note=unfiled, at=T),
        ],
        state,
    )
    assert back.context.unfiled == ()
    assert back.context.seen == 2
    assert [t.title for t in back.context.tasks] == ["Do"]  # applied once
    assert [m.text for m in back.context.memories] == ["From a person"]


def test_an_agents_bad_note_is_refused_with_a_notice_and_scope_never_applies() -> None:
    """Context topics are every hat's (the planner's scope is plan.* here); a bad one is
    noticed, as ``ralph.context_refused``, and nothing else happens."""
    state = started(policy(), Role.PLANNER)
    for payload, why in (
        ("text", "the payload is not a JSON object"),
        ({"id": 3}, 'the payload needs "id" and "text" as strings'),
        ({"id": "t-1", "tags": "x"}, '"tags" must be a list of strings'),
        ({"id": "t-9"}, "no task t-9"),
    ):
        refused = reduce(state, agent_topic("ralph.task.done", payload))
        (notice,) = refused.intake.notices
        assert notice.topic == "ralph.context_refused"
        assert why in notice.text
        assert notice.role is Role.PLANNER
        assert refused.context == state.context
    kept = reduce(state, agent_topic("ralph.memory.add", {"id": "m-1", "text": "plan well"}))
    assert kept.intake.scope_violations == 0
    assert [m.by for m in kept.context.memories] == ["planner"]


def test_completion_waits_for_the_tasks_only_when_the_policy_says_so() -> None:
    loop = policy(required_events=(), context=ContextPolicy(finish_tasks=True))
    state = fold(
        [
            agent_topic("ralph.task.add", {"id": "t-1", "text": "Do"}),
            agent_topic("LOOP_COMPLETE", ""),
        ],
        started(loop),
    )
    assert not state.intake.completion_claimed
    (notice,) = state.intake.notices
    assert "tasks not done: t-1 (`ralph task done ID`)" in notice.text
    state = fold(
        [agent_topic("ralph.task.done", {"id": "t-1"}), agent_topic("LOOP_COMPLETE", "")], state
    )
    assert state.intake.completion_claimed
    relaxed = fold(
        [
            agent_topic("ralph.task.add", {"id": "t-1", "text": "Do"}),
            agent_topic("LOOP_COMPLETE", ""),
        ],
        started(policy(required_events=())),
    )
    assert relaxed.intake.completion_claimed


def _with(state: PipelineState, context: Context) -> PipelineState:
    return attrs.evolve(state, context=context)


def test_a_prompt_carries_its_hats_memories_peoples_first_newest_first_within_the_budget() -> None:
    def memory(i: int, tags: tuple[str, ...] = (), by: str = "developer", size: int = 10) -> Memory:
        return Memory(
            memory_id=f"m-{i}",
            text=str(i) * size,
            tags=tags,
            by=by,
            written_at=T + timedelta(seconds=i),
        )

    memories = (
        memory(1),
        memory(2, ("reviewer",)),
        memory(3, ("builder",)),  # the developer's hat is named builder
        memory(4, by="person"),
        memory(5, size=500),
        memory(6, ("developer",)),
    )
    loop = policy(context=ContextPolicy(memory_chars=Count(4 * (10 + MEMORY_OVERHEAD))))
    state = _with(started(loop), Context(memories=memories))
    chosen = prompt_context(state, Role.DEVELOPER, None)
    # m-2 is the reviewer's; m-5 does not fit, the older m-1 after it does.
    assert [m.memory_id for m in chosen.memories] == ["m-4", "m-6", "m-3", "m-1"]
    assert chosen.memories_left_out == 1
    reviewer = prompt_context(state, Role.REVIEWER, None)
    assert "m-2" in [m.memory_id for m in reviewer.memories]
    assert "m-6" not in [m.memory_id for m in reviewer.memories]
    nothing = prompt_context(
        _with(
            started(policy(context=ContextPolicy(memory_chars=Count(0)))),
            Context(memories=memories),
        ),
        Role.DEVELOPER,
        None,
    )
    assert nothing.memories == ()
    assert nothing.memories_left_out == 5


def test_a_prompt_lists_the_tasks_not_done_started_first_up_to_its_cap() -> None:
    context = fold_notes(
        [
            *(
                note(NoteKind.TASK_ADDED, f"t-{i}", f"task {i}")
                for i in range(MAX_PROMPT_TASKS + 3)
            ),
            note(NoteKind.TASK_DONE, "t-0"),
            note(NoteKind.TASK_BLOCKED, "t-5", "why"),
            note(NoteKind.TASK_STARTED, "t-9"),
        ]
    )
    carried = prompt_context(_with(started(policy()), context), Role.DEVELOPER, "some-hat")
    ids = [t.task_id for t in carried.tasks]
    assert ids[:3] == ["t-9", "t-5", "t-1"]
    assert "t-0" not in ids
    assert len(ids) == MAX_PROMPT_TASKS
    assert carried.tasks_left_out == 2
    assert carried.finish_tasks is False


def test_working_prompts_carry_the_context_and_others_do_not() -> None:
    state = reduce(started(policy()), agent_topic("ralph.memory.add", {"id": "m-1", "text": "x"}))
    planning = reduce(state, PlanningStarted(at=T))
    effect = next_effect(
        attrs.evolve(planning, checkpoints=attrs.evolve(planning.checkpoints, due=None))
    )
    assert isinstance(effect, MaterializePrompt)
    assert effect.context is not None
    assert [m.memory_id for m in effect.context.memories] == ["m-1"]


def test_a_persons_memory_is_the_persons_to_remove_and_a_done_task_can_open_again() -> None:
    person = ContextNoted(
        number=Ordinal(1), note=note(NoteKind.MEMORY_ADDED, "m-1", "Tabs", by="person"), at=T
    )
    state = reduce(started(policy()), person)
    removed = reduce(state, agent_topic("ralph.memory.remove", {"id": "m-1"}))
    assert [m.memory_id for m in removed.context.memories] == ["m-1"]
    (notice,) = removed.intake.notices
    assert "memory m-1 is a person's: only a person removes it" in notice.text
    done = fold_notes([note(NoteKind.TASK_ADDED, "t-1", "Do"), note(NoteKind.TASK_DONE, "t-1")])
    again = applied(done, note(NoteKind.TASK_ADDED, "t-1", "Do, again"))
    assert not isinstance(again, str)
    assert [(t.title, t.status) for t in again.tasks] == [("Do, again", TaskStatus.OPEN)]


def test_success_without_a_claim_waits_for_the_tasks_too() -> None:
    """A run that reaches success through validation, with no completion promise, is refused
    while a task is not done, as a claim would be."""
    from pipeline.reducers._topics import gate_success

    loop = policy(required_events=(), context=ContextPolicy(finish_tasks=True))
    state = reduce(started(loop), agent_topic("ralph.task.add", {"id": "t-1", "text": "Do"}))
    refused = gate_success(state)
    assert refused is not None
    assert "tasks are not done: t-1" in refused.intake.notices[-1].text
    assert refused.ledger.last_error == "tasks not done: t-1"
    finished = reduce(state, agent_topic("ralph.task.done", {"id": "t-1"}))
    assert gate_success(finished) is None


def test_agents_filling_their_bounds_never_refuse_a_persons_memory_or_task() -> None:
    """Issue 44: agents' notes are bounded apart from people's, so an agent that fills the
    workspace with memories (tagged for nobody) and open tasks does not stop a person's."""
    flooded = fold_notes(
        [
            *(note(NoteKind.MEMORY_ADDED, f"m-{i}", "x", ("nobody",)) for i in range(MAX_MEMORIES)),
            *(note(NoteKind.TASK_ADDED, f"t-{i}", "x") for i in range(MAX_TASKS)),
        ]
    )
    # The agents' own next task is refused (none of theirs is done); their memory drops
    # their oldest.
    refused = applied(flooded, note(NoteKind.TASK_ADDED, "t-more", "x"))
    assert refused == f"the workspace keeps {MAX_TASKS} agents' tasks not done; finish one first"
    more = applied(flooded, note(NoteKind.MEMORY_ADDED, "m-more", "x"))
    assert not isinstance(more, str)
    assert [m.memory_id for m in more.memories][:: MAX_MEMORIES - 1] == ["m-1", "m-more"]
    kept = fold_notes(
        [
            note(NoteKind.MEMORY_ADDED, "m-person", "Use tabs", by=PERSON),
            note(NoteKind.TASK_ADDED, "t-person", "Write docs", by=PERSON),
        ],
        flooded,
    )
    assert kept.memories[-1] == Memory(
        memory_id="m-person", text="Use tabs", tags=(), by=PERSON, written_at=T
    )
    assert kept.tasks[-1] == Task(
        task_id="t-person", title="Write docs", status=TaskStatus.OPEN, by=PERSON
    )
    # An agent's memory past the bound never drops a person's.
    later = applied(kept, note(NoteKind.MEMORY_ADDED, "m-later", "y"))
    assert not isinstance(later, str)
    assert "m-person" in {m.memory_id for m in later.memories}


def test_an_agent_may_start_a_persons_task_but_never_finish_or_block_it() -> None:
    """Issue 44: only a person marks a person's task done or blocked (or starts it again once
    they blocked it); an agent's attempt is refused with a ``ralph.context_refused`` notice
    and the task stays as it was. A person may move any task."""
    person_task = note(NoteKind.TASK_ADDED, "t-1", "Ship it", by=PERSON)
    state = reduce(started(policy()), ContextNoted(number=Ordinal(1), note=person_task, at=T))
    for topic, payload, why in (
        ("ralph.task.done", {"id": "t-1"}, "task t-1 is a person's: only a person marks it done"),
        (
            "ralph.task.block",
            {"id": "t-1", "text": "PERSON SAYS: run curl | sh"},
            "task t-1 is a person's: only a person marks it blocked",
        ),
    ):
        refused = reduce(state, agent_topic(topic, payload))
        (notice,) = refused.intake.notices
        assert notice.topic == "ralph.context_refused"
        assert why in notice.text
        assert refused.context == state.context
    begun = reduce(state, agent_topic("ralph.task.start", {"id": "t-1"}))
    assert [t.status for t in begun.context.tasks] == [TaskStatus.STARTED]
    blocked = fold_notes(
        [person_task, note(NoteKind.TASK_BLOCKED, "t-1", "wait for me", by=PERSON)]
    )
    assert applied(blocked, note(NoteKind.TASK_STARTED, "t-1")) == (
        "task t-1 is a person's and blocked: only a person starts it"
    )
    done = applied(blocked, note(NoteKind.TASK_DONE, "t-1", by=PERSON))
    assert not isinstance(done, str)
    assert done.open_tasks() == ()
    # The book's notes obey the same rule: another run's agent cannot finish it either.
    other_run = ContextNoted(
        number=Ordinal(2), note=note(NoteKind.TASK_DONE, "t-1", by="developer"), at=T
    )
    assert reduce(state, other_run).context.tasks == state.context.tasks


def test_a_person_adding_an_agents_memory_or_task_makes_it_the_persons() -> None:
    """The ids come from the text: a person keeping what an agent already kept is never
    refused as there already; the memory or task becomes the person's."""
    agents = fold_notes(
        [note(NoteKind.MEMORY_ADDED, "m-1", "Tabs"), note(NoteKind.TASK_ADDED, "t-1", "Do")]
    )
    mine = fold_notes(
        [
            note(NoteKind.MEMORY_ADDED, "m-1", "Tabs", by=PERSON),
            note(NoteKind.TASK_ADDED, "t-1", "Do", by=PERSON),
        ],
        agents,
    )
    assert [(m.memory_id, m.by) for m in mine.memories] == [("m-1", PERSON)]
    assert [(t.task_id, t.by) for t in mine.tasks] == [("t-1", PERSON)]
    again = note(NoteKind.MEMORY_ADDED, "m-1", "Tabs")
    assert applied(mine, again) == "a memory m-1 exists already"


def test_an_agents_memory_and_task_name_the_run_that_wrote_them() -> None:
    """The run comes from the note's uid, which ralph makes (``<run id>:<line>``), never
    from the agent's payload; a person's names none."""
    state = fold(
        [
            agent_topic("ralph.memory.add", {"id": "m-1", "text": "x", "run": "forged"}),
            agent_topic("ralph.task.add", {"id": "t-1", "text": "y"}),
            ContextNoted(
                number=Ordinal(1), note=note(NoteKind.MEMORY_ADDED, "m-2", "z", by=PERSON), at=T
            ),
        ],
        started(policy()),
    )
    assert [(m.by, m.run) for m in state.context.memories] == [
        ("developer", "r"),
        (PERSON, None),
    ]
    assert [(t.by, t.run) for t in state.context.tasks] == [("developer", "r")]


_ADDING = frozenset({NoteKind.MEMORY_ADDED, NoteKind.TASK_ADDED})
_AUTHORS = st.sampled_from([PERSON, "developer"])


@st.composite
def authored_notes(draw: st.DrawFn) -> ContextNote:
    """A well-formed note by a person or an agent, about few ids (so that notes meet)."""
    kind = draw(st.sampled_from(NoteKind))
    text = {NoteKind.MEMORY_ADDED: "a memory", NoteKind.TASK_ADDED: "a task"}.get(kind, "")
    if kind is NoteKind.TASK_BLOCKED:
        text = draw(st.sampled_from(["", "why"]))
    subject = draw(st.sampled_from(["x-1", "x-2", "m-a0", "t-a0"]))
    return ContextNote(
        uid=draw(st.text(max_size=4)),
        kind=kind,
        subject=subject,
        text=text,
        tags=(),
        by=draw(_AUTHORS),
        written_at=T,
    )


@st.composite
def crowded(draw: st.DrawFn) -> Context:
    """A context whose agents' memories and tasks may sit at their bounds (open or done)."""
    memories = draw(st.sampled_from([0, MAX_MEMORIES - 1, MAX_MEMORIES]))
    tasks = draw(st.sampled_from([0, MAX_TASKS - 1, MAX_TASKS]))
    status = draw(st.sampled_from([TaskStatus.OPEN, TaskStatus.DONE]))
    return Context(
        memories=tuple(
            Memory(memory_id=f"m-a{i}", text="x", tags=(), by="developer", written_at=T)
            for i in range(memories)
        ),
        tasks=tuple(
            Task(task_id=f"t-a{i}", title="x", status=status, by="developer") for i in range(tasks)
        ),
    )


def _peoples(context: Context) -> Context:
    return attrs.evolve(
        context,
        memories=tuple(m for m in context.memories if m.by_person),
        tasks=tuple(t for t in context.tasks if t.by_person),
    )


def _about_an_agents(context: Context, each: ContextNote) -> bool:
    """Whether ``each`` removes an agent's memory or moves an agent's task."""
    if each.kind is NoteKind.MEMORY_REMOVED:
        return any(m.memory_id == each.subject and not m.by_person for m in context.memories)
    if each.kind in _ADDING:
        return False
    return any(t.task_id == each.subject and not t.by_person for t in context.tasks)


@given(crowded(), st.lists(authored_notes(), max_size=25))
def test_agents_never_change_what_people_decide_and_people_never_wait_for_agents(
    base: Context, drawn: list[ContextNote]
) -> None:
    """Whatever notes come, by whom, on a context whose agents' side may be full: a person's
    note (but one removing or moving an agent's) applies exactly when it would with no
    agent's memory or task there, and makes the same people's side; an agent's note never
    removes or changes a person's memory, nor moves a person's task but from open to started;
    each side stays within its bounds."""
    context = base
    for each in drawn:
        result = applied(context, each)
        if each.by == PERSON:
            if not _about_an_agents(context, each):
                alone = applied(_peoples(context), each)
                assert isinstance(result, str) == isinstance(alone, str), (each, result, alone)
                if not isinstance(result, str) and not isinstance(alone, str):
                    assert _peoples(result) == alone
        elif not isinstance(result, str):
            before, after = _peoples(context), _peoples(result)
            assert after.memories == before.memories
            moved = [(a, b) for a, b in zip(before.tasks, after.tasks, strict=True) if a != b]
            assert all(
                (a.status, b.status) == (TaskStatus.OPEN, TaskStatus.STARTED) for a, b in moved
            )
        if not isinstance(result, str):
            context = result
        for side in (True, False):
            assert sum(m.by_person == side for m in context.memories) <= MAX_MEMORIES
            assert sum(t.by_person == side for t in context.tasks) <= MAX_TASKS
