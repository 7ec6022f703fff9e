"""Reading the report an agent writes into ``.agent/out/`` after its work (I/O: files).

Each role reports in one small file (see ``docs/architecture/runtime.md``): the planner its plan,
a developer or fixer a status word and a summary, the reviewer a list of issues, the committer
a message. A report that is missing or unreadable is a rejection, reported by the caller as a
retriable ``InvocationFailed(OUTPUT_REJECTED)`` that names the file, so the agent's chain policy
applies to it like to any other failure.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import partial

from returns.methods import unwrap_or_failure
from returns.result import Failure, Result, Success

from pipeline.core.effects import CollectReport, InvokeAgent
from pipeline.events import (
    CommitMessageGenerated,
    Count,
    DevelopmentIterationCompleted,
    DevFixCompleted,
    ErrorKind,
    FixAttemptCompleted,
    Instant,
    InvocationFailed,
    IterationStatus,
    Ordinal,
    PipelineEvent,
    PlanProduced,
    PromptKind,
    ReviewClean,
    ReviewIssuesFound,
)
from pipeline.handlers.runtime._io import Facts
from pipeline.handlers.runtime._layout import WorkspaceLayout
from pipeline.handlers.runtime._ownfiles import read_own, write_own
from pipeline.handlers.runtime._prompting import digest_of

__all__ = ["Report", "collect_report", "invocation_failed", "read_report"]

Report = Result[Facts, str]
"""The role's output facts, or why the report was rejected."""
_Status = tuple[IterationStatus, str]
"""A status report: the status word and the summary after it."""

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


def _status(layout: WorkspaceLayout, text: str) -> Result[_Status, str]:
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
    """The output facts of the agent that just finished ``effect``, read from its report:
    read the role's file, check it, and make its facts; the first step that fails says why."""
    kind = effect.prompt_kind
    if kind is PromptKind.PLANNING:
        return _read(layout, "plan").bind(partial(_plan, layout, effect, now))
    if kind is PromptKind.REVIEW:
        return _read(layout, "issues").map(partial(_review, layout, effect, now))
    if kind is PromptKind.COMMIT_MESSAGE:
        return _read(layout, "commit_message").bind(partial(_message, layout, now))
    if kind is PromptKind.HAT:
        # A hat reports by the topics it publishes, which routing reads: it writes no file.
        return Success(
            _iteration_completed(effect, now, (IterationStatus.COMPLETED, "hat finished"))
        )
    status = _read(layout, "status").bind(partial(_status, layout))
    if kind is PromptKind.DEVELOPMENT:
        return status.map(partial(_iteration_completed, effect, now))
    if kind is PromptKind.REVIEW_FIX:
        return status.map(partial(_fix_completed, effect, now))
    return status.map(partial(_dev_fix_completed, now))


def _iteration_completed(
    effect: InvokeAgent | CollectReport, now: Callable[[], Instant], said: _Status
) -> Facts:
    status, summary = said
    iteration = Ordinal(effect.iteration)
    return (
        DevelopmentIterationCompleted(
            iteration=iteration, status=status, summary=summary or status.value, at=now()
        ),
    )


def _fix_completed(
    effect: InvokeAgent | CollectReport, now: Callable[[], Instant], said: _Status
) -> Facts:
    return (FixAttemptCompleted(review_pass=Ordinal(effect.review_pass), status=said[0], at=now()),)


def _dev_fix_completed(now: Callable[[], Instant], said: _Status) -> Facts:
    status, diagnosis = said
    return (
        DevFixCompleted(
            success=status is IterationStatus.COMPLETED,
            summary=diagnosis or "no diagnosis",
            at=now(),
        ),
    )


def _plan(
    layout: WorkspaceLayout,
    effect: InvokeAgent | CollectReport,
    now: Callable[[], Instant],
    text: str,
) -> Report:
    if not text.strip():
        return Failure(f"the plan in {layout.relative(layout.output('plan'))} is empty")
    # Kept where later prompts read it; the report folder is emptied before every invocation.
    # Never through a link: an agent may have swapped PLAN.md for one to any file of the user's.
    write_own(layout.plan, text.encode())
    digest = digest_of(text.encode())
    return Success(
        (PlanProduced(iteration=Ordinal(effect.iteration + 1), plan_digest=digest, at=now()),)
    )


def _review(
    layout: WorkspaceLayout,
    effect: InvokeAgent | CollectReport,
    now: Callable[[], Instant],
    text: str,
) -> Facts:
    # Kept where the review-fix prompt reads it (the report folder is emptied per invocation).
    write_own(layout.issues, text.encode())
    count = len(_ISSUE.findall(text))
    review_pass = Ordinal(effect.review_pass)
    if count == 0:
        return (ReviewClean(review_pass=review_pass, at=now()),)
    return (ReviewIssuesFound(review_pass=review_pass, count=Count(count), at=now()),)


def _message(layout: WorkspaceLayout, now: Callable[[], Instant], text: str) -> Report:
    message = text.strip()
    if not message:
        where = layout.relative(layout.output("commit_message"))
        return Failure(f"the commit message in {where} is empty")
    return Success((CommitMessageGenerated(message=message, at=now()),))


def collect_report(
    effect: CollectReport, layout: WorkspaceLayout, now: Callable[[], Instant]
) -> tuple[PipelineEvent, ...]:
    """The role's report, read now that its structured response was accepted; a report that
    cannot be read or checked is a rejected output, retriable."""

    def rejected(why: str) -> Facts:
        return invocation_failed(effect, ErrorKind.OUTPUT_REJECTED, why, now(), retriable=True)

    return unwrap_or_failure(read_report(effect, layout, now).alt(rejected))


def invocation_failed(
    effect: InvokeAgent | CollectReport,
    error: ErrorKind,
    message: str,
    at: Instant,
    *,
    retriable: bool,
) -> Facts:
    """The invocation ``effect`` asked for (or collects the report of) failed: ``error``,
    said by ``message``."""
    return (
        InvocationFailed(
            role=effect.role,
            agent=effect.agent,
            error=error,
            message=message,
            retriable=retriable,
            at=at,
        ),
    )
