"""Reading the report an agent writes into ``.agent/out/`` after its work (I/O: files).

Each role reports in one small file (see ``docs/architecture/runtime.md``): the planner its plan,
a developer or fixer a status word and a summary, the reviewer a list of issues, the committer
a message. A report that is missing or unreadable is a rejection, reported by the caller as a
retriable ``InvocationFailed(OUTPUT_REJECTED)`` that names the file, so the agent's chain policy
applies to it like to any other failure.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable

from returns.result import Failure, Result, Success

from pipeline.effects import CollectReport, InvokeAgent
from pipeline.events import (
    CommitMessageGenerated,
    Count,
    DevelopmentIterationCompleted,
    DevFixCompleted,
    Digest,
    FixAttemptCompleted,
    Instant,
    IterationStatus,
    Ordinal,
    PipelineEvent,
    PlanProduced,
    PromptKind,
    ReviewClean,
    ReviewIssuesFound,
)
from pipeline.handlers.runtime._layout import WorkspaceLayout
from pipeline.handlers.runtime._ownfiles import read_own

__all__ = ["Report", "read_report"]

Report = Result[tuple[PipelineEvent, ...], str]
"""The role's output facts, or why the report was rejected."""

_ISSUE = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+\S", re.MULTILINE)
_MAX_SUMMARY = 2_000


def _read(layout: WorkspaceLayout, purpose: str) -> Result[str, str]:
    path = layout.output(purpose)
    try:
        return Success(read_own(path).decode("utf-8"))
    except FileNotFoundError:
        return Failure(f"the agent wrote no {layout.relative(path)}")
    except (OSError, ValueError) as error:
        # ValueError: a link or no regular file (UnsafeFileError), too large, not UTF-8
        return Failure(f"cannot read {layout.relative(path)}: {error}")


def _status(layout: WorkspaceLayout, text: str) -> Result[tuple[IterationStatus, str], str]:
    first, _, rest = text.strip().partition("\n")
    word = first.strip().lower()
    try:
        status = IterationStatus(word)
    except ValueError:
        allowed = ", ".join(s.value for s in IterationStatus)
        where = layout.relative(layout.output("status"))
        return Failure(f"{where} starts with {first.strip()[:60]!r}, not one of {allowed}")
    return Success((status, rest.strip()[:_MAX_SUMMARY]))


def read_report(
    effect: InvokeAgent | CollectReport, layout: WorkspaceLayout, now: Callable[[], Instant]
) -> Report:
    """The output facts of the agent that just finished ``effect``, read from its report."""
    kind = effect.prompt_kind
    if kind is PromptKind.PLANNING:
        return _read(layout, "plan").bind(lambda text: _plan(layout, text, effect, now))
    if kind is PromptKind.REVIEW:
        return _read(layout, "issues").map(lambda text: _review(layout, text, effect, now))
    if kind is PromptKind.COMMIT_MESSAGE:
        return _read(layout, "commit_message").bind(lambda text: _message(layout, text, now))
    status = _read(layout, "status").bind(lambda text: _status(layout, text))
    if kind is PromptKind.DEVELOPMENT:
        return status.map(
            lambda s: (
                DevelopmentIterationCompleted(
                    Ordinal(effect.iteration), s[0], s[1] or s[0].value, now()
                ),
            )
        )
    if kind is PromptKind.REVIEW_FIX:
        return status.map(
            lambda s: (FixAttemptCompleted(Ordinal(effect.review_pass), s[0], now()),)
        )
    return status.map(
        lambda s: (
            DevFixCompleted(s[0] is IterationStatus.COMPLETED, s[1] or "no diagnosis", now()),
        )
    )


def _plan(
    layout: WorkspaceLayout,
    text: str,
    effect: InvokeAgent | CollectReport,
    now: Callable[[], Instant],
) -> Report:
    if not text.strip():
        return Failure(f"the plan in {layout.relative(layout.output('plan'))} is empty")
    # Kept where later prompts read it; the report folder is emptied before every invocation.
    layout.plan.write_text(text, "utf-8")
    digest = Digest(hashlib.sha256(text.encode()).hexdigest())
    return Success((PlanProduced(Ordinal(effect.iteration + 1), digest, now()),))


def _review(
    layout: WorkspaceLayout,
    text: str,
    effect: InvokeAgent | CollectReport,
    now: Callable[[], Instant],
) -> tuple[PipelineEvent, ...]:
    # Kept where the review-fix prompt reads it (the report folder is emptied per invocation).
    layout.issues.write_text(text, "utf-8")
    count = len(_ISSUE.findall(text))
    review_pass = Ordinal(effect.review_pass)
    if count == 0:
        return (ReviewClean(review_pass, now()),)
    return (ReviewIssuesFound(review_pass, Count(count), now()),)


def _message(layout: WorkspaceLayout, text: str, now: Callable[[], Instant]) -> Report:
    message = text.strip()
    if not message:
        where = layout.relative(layout.output("commit_message"))
        return Failure(f"the commit message in {where} is empty")
    return Success((CommitMessageGenerated(message, now()),))
