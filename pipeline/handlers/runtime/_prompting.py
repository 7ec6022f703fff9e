"""Writing a task's prompt into the workspace: its template filled in, with the sections the
role's hat and the run's state add, written as ralph's own file (I/O: files)."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from pathlib import Path

from pipeline import PipelineError
from pipeline.core.config import HatConfig, RalphConfig
from pipeline.core.effects import MaterializePrompt
from pipeline.events import (
    Digest,
    Instant,
    PromptKind,
    PromptMaterialized,
    WorkspaceErrorKind,
)
from pipeline.handlers.intake import (
    Card,
    CardMemory,
    CardTask,
    IntakeLimits,
    card_path,
    write_card,
)
from pipeline.handlers.runtime._io import Facts, facts_or_io_error
from pipeline.handlers.runtime._layout import WorkspaceLayout
from pipeline.handlers.runtime._ownfiles import write_own
from pipeline.handlers.runtime._prompts import (
    fenced,
    render_context,
    render_correction,
    render_feedback,
    render_hat,
    render_notices,
    render_prompt,
    render_publishing,
    render_response_request,
    render_work_hat,
)

__all__ = [
    "card_of",
    "digest_of",
    "intake_limits",
    "materialize",
    "prompt_text",
    "user_prompt",
]


def digest_of(data: bytes) -> Digest:
    """The SHA-256 of ``data``, as events record it."""
    return Digest(hashlib.sha256(data).hexdigest())


def user_prompt(layout: WorkspaceLayout, run_id: str) -> str:
    """The run's saved prompt; a run whose copy is gone cannot go on (an agent given
    "no prompt" would work on nothing)."""
    saved = layout.saved_prompt(run_id)
    try:
        return saved.read_text("utf-8", "replace").strip() or "(no prompt)"
    except FileNotFoundError as error:
        raise PipelineError(
            f"the run's saved prompt {saved} is gone, so no agent can be told its task; "
            "start a new run with the prompt"
        ) from error


def _text(path: Path, missing: str) -> str:
    try:
        text = path.read_text("utf-8").strip()
    except FileNotFoundError:
        return missing
    return text or missing


def prompt_text(
    effect: MaterializePrompt, layout: WorkspaceLayout, config: RalphConfig, run_id: str
) -> str:
    """The prompt ``effect`` asks for, with the sections its role's hat and state add."""
    out_dir = layout.relative(layout.output_dir)
    if effect.kind is PromptKind.FORMAT_CORRECTION:
        if effect.correction is None or effect.response_schema is None:
            raise PipelineError("a formatting correction needs the response and its schema")
        return render_correction(effect.correction, effect.response_schema, out_dir)
    values = {
        "user_prompt": user_prompt(layout, run_id),
        "plan": _text(layout.plan, "(no plan yet)"),
        "issues": _text(layout.issues, "(no issues recorded)"),
        "last_error": effect.last_error or "(none)",
        "iteration": str(effect.iteration),
        "review_pass": str(effect.review_pass),
        "out_dir": out_dir,
    }
    schema = effect.response_schema
    if effect.hat is not None:
        hat = config.hats.work.get(effect.hat, HatConfig())
        values |= _trigger_values(effect)
        section = render_work_hat(hat, effect.hat)
    else:
        hat = config.hats.for_role(effect.role)
        section = render_hat(hat.hat(effect.role), hat, config.loop.enforce_hat_scope)
    return (
        render_prompt(effect.kind, values)
        + section
        + render_publishing(effect.publishing)
        + render_context(effect.context)
        + ("" if schema is None else render_response_request(schema, out_dir))
        + render_notices(effect.notices)
        + render_feedback(effect.feedback, effect.feedback_omitted)
    )


def _trigger_values(effect: MaterializePrompt) -> dict[str, str]:
    """The placeholders of a hat's prompt: its name, and the topic that woke it with its
    payload (fenced: agents wrote it)."""
    trigger = effect.trigger
    payload = "(none)"
    if trigger is not None and trigger.payload.value is not None:
        value = trigger.payload.value
        payload = fenced(value if isinstance(value, str) else trigger.payload.text, "text")
    return {
        "hat": effect.hat or "",
        "topic": "(none)" if trigger is None else trigger.topic,
        "payload": payload,
    }


def intake_limits(config: RalphConfig) -> IntakeLimits:
    """What one invocation's events may add to the log (``[budgets]``)."""
    b = config.budgets
    return IntakeLimits(
        lines=b.max_event_lines, bytes=b.max_event_bytes, line_bytes=b.max_event_line_bytes
    )


def card_of(
    effect: MaterializePrompt, layout: WorkspaceLayout, config: RalphConfig, run_id: str
) -> Card:
    """The MCP card of the prompt ``effect`` asks for: what ``ralph mcp`` knows of it."""
    context = effect.context
    memories = () if context is None else context.memories
    tasks = () if context is None else context.tasks
    return Card(
        run=run_id,
        role=effect.role.value,
        hat=effect.hat,
        prompt_kind=effect.kind.value,
        events_file=layout.relative(layout.events_file(run_id)),
        publishing=effect.publishing,
        limits=intake_limits(config),
        standing=effect.standing,
        memories=tuple(
            CardMemory(id=m.memory_id, text=m.text, tags=m.tags, by=m.by, run=m.run)
            for m in memories
        ),
        memories_left_out=0 if context is None else context.memories_left_out,
        tasks=tuple(
            CardTask(
                id=t.task_id,
                title=t.title,
                status=t.status.value,
                reason=t.reason,
                by=t.by,
                run=t.run,
            )
            for t in tasks
        ),
        tasks_left_out=0 if context is None else context.tasks_left_out,
    )


def materialize(
    effect: MaterializePrompt,
    layout: WorkspaceLayout,
    config: RalphConfig,
    run_id: str,
    clock: Callable[[], Instant],
) -> Facts:
    """Write the prompt ``effect`` asks for, and its MCP card beside the run's events file;
    ``PromptMaterialized`` with the prompt's digest."""
    text = prompt_text(effect, layout, config, run_id).encode()
    path = layout.prompt(effect.kind)
    card = card_of(effect, layout, config, run_id)

    def write() -> Facts:
        # Every prompt's card, a commit message's too: its agent must not publish with the
        # last turn's card. Written whole and renamed, so a link left there is replaced.
        write_card(card_path(layout.root, run_id), card)
        write_own(path, text)  # an agent may have planted a link or a folder there
        relative = layout.relative(path)
        return (
            PromptMaterialized(
                kind=effect.kind, path=relative, content_digest=digest_of(text), at=clock()
            ),
        )

    # ValueError: what is there is a link or no regular file (UnsafeFileError).
    catching = (OSError, ValueError)
    return facts_or_io_error(write, WorkspaceErrorKind.WRITE, str(path), clock, catching=catching)
