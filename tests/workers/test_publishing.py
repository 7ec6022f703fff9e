"""The store a remote ticket's run appends through (``PublishingStore``): what each fact
needs elsewhere is published before the fact goes in, and a file an agent replaced by a link
is never carried. An in-memory store; no git, no database."""

from __future__ import annotations

import os
from datetime import UTC, datetime
from pathlib import Path

import pytest

from pipeline.app.workers._publishing import PublishingStore
from pipeline.events import (
    CommitCreated,
    Digest,
    Instant,
    Ordinal,
    PipelineEvent,
    PlanProduced,
    PromptKind,
    PromptMaterialized,
    ReviewClean,
    RunId,
)
from pipeline.handlers.runtime import WorkspaceLayout
from pipeline.handlers.store import LeaseLostError, MemoryEventStore

AT = Instant(datetime(2026, 11, 29, tzinfo=UTC))
RUN = RunId("r1")


def _layout(root: Path) -> WorkspaceLayout:
    layout = WorkspaceLayout(root=root)
    layout.prompt(PromptKind.DEVELOPMENT).parent.mkdir(parents=True)
    layout.plan.write_bytes(b"1. the plan")
    layout.issues.write_bytes(b"- an issue")
    layout.prompt(PromptKind.DEVELOPMENT).write_bytes(b"the prompt")
    return layout


def test_each_fact_goes_in_only_after_what_it_needs_is_published(tmp_path: Path) -> None:
    """A prompt's, a plan's and a commit's facts are appended after the prompt and the plan
    are kept and the commit pushed (the log's head unmoved when each happens); a carry
    refused (the lease gone) raises ``LeaseLostError`` and appends nothing."""
    layout, store = _layout(tmp_path), MemoryEventStore()
    done: list[tuple[str, object, int]] = []

    def publish(sha: str) -> None:
        done.append(("push", sha, store.head(RUN)))

    def carry(path: str, body: bytes) -> bool:
        done.append(("keep", (path, body), store.head(RUN)))
        return True

    facts: list[PipelineEvent] = [
        PromptMaterialized(
            kind=PromptKind.DEVELOPMENT, path="p", content_digest=Digest("d"), at=AT
        ),
        PlanProduced(iteration=Ordinal(1), plan_digest=Digest("d"), at=AT),
        CommitCreated(sha="a" * 40, branch="ralph/run-t", at=AT),
    ]
    publishing = PublishingStore(store, layout=layout, publish=publish, carry=carry, redact=str)
    assert publishing.append(RUN, 0, facts) == 3
    assert done == [
        ("keep", (".agent/prompts/development.md", b"the prompt"), 0),
        ("keep", (".agent/PLAN.md", b"1. the plan"), 0),
        ("push", "a" * 40, 0),
    ]
    refused = PublishingStore(
        store, layout=layout, publish=publish, carry=lambda _p, _b: False, redact=str
    )
    with pytest.raises(LeaseLostError, match=r"ISSUES\.md"):
        refused.append(RUN, 3, [ReviewClean(review_pass=Ordinal(1), at=AT)])
    assert store.head(RUN) == 3


def test_a_plan_replaced_by_a_link_is_not_carried(tmp_path: Path) -> None:
    """An agent's link at ``.agent/PLAN.md`` to a secret of the worker's host: nothing is
    kept in the store (the team's to read), and the fact goes in all the same."""
    layout, store = _layout(tmp_path / "repo"), MemoryEventStore()
    (tmp_path / "secret").write_bytes(b"the host's key")
    layout.plan.unlink()
    os.symlink(tmp_path / "secret", layout.plan)
    kept: list[str] = []

    def carry(path: str, _body: bytes) -> bool:
        kept.append(path)
        return True

    publishing = PublishingStore(
        store, layout=layout, publish=lambda _s: None, carry=carry, redact=str
    )
    publishing.append(RUN, 0, [PlanProduced(iteration=Ordinal(1), plan_digest=Digest("d"), at=AT)])
    assert kept == []
    assert store.head(RUN) == 1
