"""The runtime's I/O boundary: a failing file-system step is a WorkspaceIoError fact naming
the place, its facts otherwise; anything else a step raises is a bug and propagates."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from pipeline.events import (
    FinalizingStarted,
    Instant,
    PipelineEvent,
    WorkspaceErrorKind,
    WorkspaceIoError,
)
from pipeline.handlers.runtime._io import facts_or_io_error

AT = Instant(datetime(2026, 11, 26, tzinfo=UTC))


def _clock() -> Instant:
    return AT


def test_a_step_that_works_reports_its_facts(tmp_path: Path) -> None:
    def write() -> tuple[PipelineEvent, ...]:
        (tmp_path / "marker").write_text("done")
        return (FinalizingStarted(at=AT),)

    kind = WorkspaceErrorKind.WRITE
    assert facts_or_io_error(write, kind, "marker", _clock) == (FinalizingStarted(at=AT),)
    assert (tmp_path / "marker").read_text() == "done"


def test_a_step_the_file_system_refuses_is_a_workspace_io_error(tmp_path: Path) -> None:
    """A real refusal (a folder where a file stands): the error fact names the place and
    says why, after the prefix the caller gave."""
    (tmp_path / "file").write_text("in the way")

    def write() -> tuple[PipelineEvent, ...]:
        (tmp_path / "file" / "marker").write_text("done")
        return (FinalizingStarted(at=AT),)

    kind = WorkspaceErrorKind.WRITE
    (fact,) = facts_or_io_error(write, kind, "file/marker", _clock, "cannot write: ")
    assert isinstance(fact, WorkspaceIoError)
    assert (fact.kind, fact.path, fact.at) == (kind, "file/marker", AT)
    assert fact.message.startswith("cannot write: [Errno 20] Not a directory")


def test_what_a_step_does_not_expect_is_a_bug_and_propagates() -> None:
    def broken() -> tuple[PipelineEvent, ...]:
        raise KeyError("a bug")

    with pytest.raises(KeyError, match="a bug"):
        facts_or_io_error(broken, WorkspaceErrorKind.READ, "x", _clock)
