"""Which memories and tasks a working prompt carries (pure).

The rules (``docs/architecture/context.md``):

1. A memory is for a prompt when it has no tags, or a tag names the hat at work (a
   topology's hat), the role's hat or the role itself (``developer``, ``reviewer``...).
2. Of those, a person's memories come first, then the agents', each newest first.
3. Whole memories are taken in that order while they fit in ``[context] memory_chars``
   characters; one that does not fit is passed over for a shorter one after it. The prompt
   says how many were left out.
4. Every task not done is listed, started ones first, then blocked, then open, up to
   :data:`MAX_PROMPT_TASKS`; the prompt says how many more there are.
"""

from __future__ import annotations

from typing import Final

from pipeline.core.effects import PromptContext
from pipeline.core.state import PERSON, Memory, PipelineState, TaskStatus
from pipeline.events import ContextPolicy, Count, Role

__all__ = ["MAX_PROMPT_TASKS", "prompt_context"]

MAX_PROMPT_TASKS: Final = 30
"""The most tasks a prompt lists."""

MEMORY_OVERHEAD: Final = 16
"""What a memory costs of the budget besides its text: its id and bullet."""

_TASK_ORDER: Final = {TaskStatus.STARTED: 0, TaskStatus.BLOCKED: 1, TaskStatus.OPEN: 2}

_DEFAULT: Final = ContextPolicy()


def _for(memory: Memory, names: frozenset[str]) -> bool:
    return not memory.tags or any(tag in names for tag in memory.tags)


def prompt_context(state: PipelineState, role: Role, hat: str | None) -> PromptContext:
    """The memories and tasks the prompt of ``role`` (wearing the topology ``hat``) carries."""
    run = state.run
    policy = (None if run is None else run.loop.context) or _DEFAULT
    context = state.context
    names = {role.value}
    if hat is not None:
        names.add(hat)
    role_hat = None if run is None else run.loop.hat(role)
    if role_hat is not None:
        names.add(role_hat.name)
    wanted = frozenset(names)
    applicable = [m for m in reversed(context.memories) if _for(m, wanted)]
    applicable.sort(key=lambda m: m.by != PERSON)  # stable: newest first within each
    budget: int = policy.memory_chars
    chosen: list[Memory] = []
    for memory in applicable:
        cost = len(memory.text) + MEMORY_OVERHEAD
        if cost <= budget:
            chosen.append(memory)
            budget -= cost
    open_tasks = sorted(context.open_tasks(), key=lambda t: _TASK_ORDER[t.status])
    return PromptContext(
        memories=tuple(chosen),
        memories_left_out=Count(len(applicable) - len(chosen)),
        tasks=tuple(open_tasks[:MAX_PROMPT_TASKS]),
        tasks_left_out=Count(max(0, len(open_tasks) - MAX_PROMPT_TASKS)),
        finish_tasks=policy.finish_tasks,
    )
