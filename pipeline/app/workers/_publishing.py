"""The event store a remote ticket's run appends through: each fact that a worker on another
host needs something for is preceded by that something, put where that worker finds it (I/O:
git and the queue).

A commit's fact (``CommitCreated``, ``RebaseSucceeded``) is appended only once its commit is
on the remote (push-before-append), so whatever the log records, the pushed branch holds, and
a worker that takes the run over elsewhere finds it there. The plan's and the review's facts
(``PlanProduced``, ``ReviewIssuesFound``, ``ReviewClean``) are appended only once the file
their agent wrote is kept in the queue, so the kept file is never older than the log; so is a
rendered prompt's (``PromptMaterialized``), which an invocation asked again after a takeover
reads as it was (it is not rendered again).

A kept file goes to the store the whole team reads, and its bytes are an agent's (the plan,
the issues, and the prompts that quote them): it is kept with every secret masked, as every
fact is (``redact``: the run's redactor). The file the run reads on this host is left as it
is; a takeover elsewhere reads the masked copy.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import final

from pipeline.core.serialization import EncodedCheckpoint
from pipeline.events import (
    CommitCreated,
    PipelineEvent,
    PlanProduced,
    PromptMaterialized,
    RebaseSucceeded,
    ReviewClean,
    ReviewIssuesFound,
    RunId,
)
from pipeline.handlers.runtime import WorkspaceLayout, read_own
from pipeline.handlers.store import (
    EventStore,
    LeaseLostError,
    Letter,
    Message,
    MessageKind,
    RunSummary,
)

__all__ = ["PublishingStore"]


@final
class PublishingStore:
    """An :class:`~pipeline.handlers.store.EventStore` that delegates every call to ``store``
    (the ticket's leased store), pushing each commit with ``publish`` and keeping the plan,
    the issues and each rendered prompt, masked by ``redact``, with ``carry`` (False: the
    lease is gone) before their facts go in."""

    def __init__(
        self,
        store: EventStore,
        *,
        layout: WorkspaceLayout,
        publish: Callable[[str], None],
        carry: Callable[[str, bytes], bool],
        redact: Callable[[str], str],
    ) -> None:
        self._store, self._layout = store, layout
        self._publish, self._carry, self._redact = publish, carry, redact

    def append(
        self,
        run_id: RunId,
        expected_sequence: int,
        events: Sequence[PipelineEvent],
        *,
        flush: bool = True,
    ) -> int:
        """Publish what ``events`` need elsewhere, then append them to the store."""
        for event in events:
            match event:
                case CommitCreated(sha=sha) | RebaseSucceeded(head=sha):
                    self._publish(sha)
                case PlanProduced():
                    self._keep(self._layout.plan)
                case PromptMaterialized(kind=kind):
                    self._keep(self._layout.prompt(kind))
                case ReviewIssuesFound() | ReviewClean():
                    self._keep(self._layout.issues)
                case _:
                    pass
        return self._store.append(run_id, expected_sequence, events, flush=flush)

    def _keep(self, path: Path) -> None:
        try:
            body = read_own(path)
        except (OSError, ValueError):  # ValueError: an UnsafeFileError, or over the bound
            # Not the file the handler just wrote (a link or a folder in its place, or over
            # the bound): nothing of it is kept, and a takeover elsewhere starts without it.
            return
        # surrogateescape: bytes that are not UTF-8 come back as they were.
        body = self._redact(body.decode("utf-8", "surrogateescape")).encode(
            "utf-8", "surrogateescape"
        )
        if not self._carry(self._layout.relative(path), body):
            raise LeaseLostError(f"the lease is gone: {self._layout.relative(path)} not kept")

    def read(self, run_id: RunId, from_sequence: int = 0) -> Iterator[PipelineEvent]:
        """The store's."""
        return self._store.read(run_id, from_sequence)

    def head(self, run_id: RunId) -> int:
        """The store's."""
        return self._store.head(run_id)

    def runs(self) -> list[RunSummary]:
        """The store's."""
        return self._store.runs()

    def save_checkpoint(self, run_id: RunId, checkpoint: EncodedCheckpoint) -> None:
        """The store's."""
        self._store.save_checkpoint(run_id, checkpoint)

    def checkpoints(self, run_id: RunId) -> list[EncodedCheckpoint]:
        """The store's."""
        return self._store.checkpoints(run_id)

    def post(self, letters: Sequence[Letter]) -> list[Message]:
        """The store's."""
        return self._store.post(letters)

    def inbox(self, kind: MessageKind, to: RunId | None, after: int = 0) -> list[Message]:
        """The store's."""
        return self._store.inbox(kind, to, after)

    def close(self) -> None:
        """Nothing: the store is its opener's to close."""
