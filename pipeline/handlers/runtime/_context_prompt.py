"""The prompt's section on the workspace's memories and tasks, and how an agent keeps them
(pure text; the handler writes it with the rest of the prompt).

Memories and task titles are written by agents and people: they are shown inside one code
fence, where no line of theirs can pass for a heading of ralph's.
"""

from __future__ import annotations

from pipeline.effects import PromptContext
from pipeline.handlers.runtime._prompts import fenced
from pipeline.state import Memory, Task

__all__ = ["render_context"]

_HOW = (
    "Keep what later iterations and runs should know with `\"$RALPH_BIN\" memory add 'TEXT'` "
    "(`--tag HAT` for one hat only; `memory remove ID` when it is wrong). Track the work with "
    "`\"$RALPH_BIN\" task add 'TITLE'`, then `task start ID`, `task done ID` or "
    "`task block ID --reason 'WHY'`; each prints the id."
)


def _memory_line(memory: Memory) -> str:
    text = memory.text.replace("\n", "\n  ")
    return f"[{memory.memory_id}] {text}"


def _task_line(task: Task) -> str:
    return f"[{task.task_id}] ({task.status_text}) {task.title}".replace("\n", " ")


def render_context(context: PromptContext | None) -> str:
    """The section listing the prompt's memories and open tasks, with how to keep them ("" for
    a prompt that takes none)."""
    if context is None:
        return ""
    parts = ["\n## Memories and tasks\n", _HOW]
    if context.memories:
        parts += [
            "",
            "What this workspace remembers (people's first, then newest first):",
            "",
            fenced("\n".join(_memory_line(m) for m in context.memories), "text"),
        ]
    if context.memories_left_out:
        parts += ["", f"{context.memories_left_out} more memories did not fit this prompt."]
    if context.tasks:
        parts += [
            "",
            "Tasks not done yet:",
            "",
            fenced("\n".join(_task_line(t) for t in context.tasks), "text"),
        ]
    if context.tasks_left_out:
        parts += ["", f"{context.tasks_left_out} more tasks are not done."]
    if context.finish_tasks:
        parts += ["", "ralph accepts the completion only once every task is done."]
    return "\n".join(parts) + "\n"
