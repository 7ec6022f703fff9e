"""The record a resume reads (the preset a configuration digest started with, in the git
directory) and the handoff a chain's next run reads (what the run before it did)."""

from __future__ import annotations

import subprocess
from datetime import UTC, datetime
from pathlib import Path

import pytest

from pipeline.app.workflows import (
    PresetError,
    handoff_section,
    load_preset,
    recall_workflow,
    remember_workflow,
)
from pipeline.events import (
    HatActivated,
    Json,
    Ordinal,
    PipelineEvent,
    RunCompleted,
    TerminationReason,
    TopicPublished,
)
from pipeline.handlers.runtime import WorkspaceLayout

DIGEST = "ab" * 32
AT = datetime(2026, 1, 1, tzinfo=UTC)


@pytest.fixture
def layout(tmp_path: Path) -> WorkspaceLayout:
    """A git repository's layout (its state directory is .git/ralph)."""
    subprocess.run(["git", "init", "--quiet", str(tmp_path)], check=True)
    return WorkspaceLayout(root=tmp_path)


def test_a_remembered_preset_is_recalled_by_its_digest(layout: WorkspaceLayout) -> None:
    """Kept in the git directory (out of reach of git clean), read back equal; remembering
    twice changes nothing; another digest recalls nothing."""
    tdd = load_preset("tdd")
    remember_workflow(layout, DIGEST, tdd)
    remember_workflow(layout, DIGEST, tdd)
    assert recall_workflow(layout, DIGEST) == tdd
    assert (layout.state_dir / "workflows" / DIGEST / "tdd.toml").read_text() == tdd.text
    assert str(layout.state_dir).startswith(str(layout.root / ".git"))
    assert recall_workflow(layout, "cd" * 32) is None


def test_a_digest_from_a_log_is_never_a_path(layout: WorkspaceLayout) -> None:
    """A digest that is not 64 hex digits recalls nothing and cannot be remembered."""
    assert recall_workflow(layout, "../../etc") is None
    with pytest.raises(ValueError, match="not a configuration digest"):
        remember_workflow(layout, "../x", load_preset("tdd"))


def test_a_damaged_record_is_an_error_not_a_silent_default(layout: WorkspaceLayout) -> None:
    """Two files, or a file that is no preset: PresetError naming the place, so that a
    resume never goes on without the workflow its run started with."""
    remember_workflow(layout, DIGEST, load_preset("tdd"))
    folder = layout.state_dir / "workflows" / DIGEST
    (folder / "debug.toml").write_text(load_preset("debug").text)
    with pytest.raises(PresetError, match="found 2"):
        recall_workflow(layout, DIGEST)
    (folder / "debug.toml").unlink()
    (folder / "tdd.toml").write_text("[loop\n")
    with pytest.raises(PresetError, match=r"tdd\.toml: not valid TOML"):
        recall_workflow(layout, DIGEST)


def published(topic: str, payload: object, line: int) -> TopicPublished:
    """An agent's topic."""
    return TopicPublished(
        topic=topic, payload=Json.of(payload), line_number=Ordinal(line), emitted_at=None, at=AT
    )


def test_the_handoff_says_how_the_run_ended_its_hats_and_last_topics() -> None:
    """The workflow, the run and its end; the hats in order (a repeated hat once); the last
    five topics with their payloads on one line each, long ones cut short."""
    events: list[PipelineEvent] = [
        HatActivated(iteration=Ordinal(1), hat="researcher", topic="research.start", at=AT),
        published("research.finding", "old", 1),
        HatActivated(iteration=Ordinal(2), hat="researcher", topic="research.followup", at=AT),
        HatActivated(iteration=Ordinal(3), hat="synthesizer", topic="research.finding", at=AT),
        *(published(f"topic.{n}", {"n": n}, n + 2) for n in range(4)),
        published("LOOP_COMPLETE", "The answer:\n  it is  42. " + "x" * 900, 9),
        RunCompleted(reason=TerminationReason.COMPLETED, at=AT),
    ]
    text = handoff_section("research", "r-1", events)
    assert "## Before this run: the workflow `research`" in text
    assert "run r-1; it ended `completed`" in text
    assert "researcher, synthesizer." in text
    assert "old" not in text  # the sixth topic from the end
    assert '- `topic.0`: {"n":0}' in text
    line = next(x for x in text.splitlines() if x.startswith("- `LOOP_COMPLETE`"))
    assert line.startswith("- `LOOP_COMPLETE`: The answer: it is 42. xxx")
    assert line.endswith("...")
    assert len(line) < 600


def test_the_handoff_of_a_run_without_hats_or_topics_is_short() -> None:
    """The built-in pipeline's run: no hat line, no topics section."""
    text = handoff_section(
        "code-assist", "r-2", [RunCompleted(reason=TerminationReason.COMPLETED, at=AT)]
    )
    assert "hats" not in text
    assert "topics" not in text
    assert "`completed`" in text
