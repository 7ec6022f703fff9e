"""Hand-written reducers doing comparable work to ours: the floors the fold is measured against.

``evolve_fold``: one flat frozen attrs state and a ``match`` with ``attrs.evolve`` per event (the
floor named by the pure-core issue). ``dict_fold``: the same transitions on one mutable dict
(the floor for Python at all). Both track phase, step, iteration, review pass, retries,
attempts, the agent in flight, topics, malformed lines, checkpoints and commits; neither
records anomalies, validates a transition, or keeps history the way ``reduce`` does.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import attrs

from pipeline.events import (
    CheckpointSaved,
    CommitCreated,
    DevelopmentIterationCompleted,
    DevelopmentIterationStarted,
    InvocationFailed,
    InvocationStarted,
    InvocationSucceeded,
    InvocationTimedOut,
    OutputLineMalformed,
    PipelineEvent,
    PromptMaterialized,
    ReviewPassStarted,
    TopicPublished,
)

__all__ = ["dict_fold", "evolve_fold"]


@attrs.frozen
class FlatState:
    """Everything in one frozen record."""

    sequence: int = 0
    phase: str = "planning"
    step: str = "begin"
    iteration: int = 0
    review_pass: int = 0
    retries: int = 0
    attempt: int = 0
    in_flight: bool = False
    topics: frozenset[str] = frozenset()
    malformed: int = 0
    consecutive_malformed: int = 0
    checkpoints: int = 0
    commits: int = 0
    last_error: str | None = None


def evolve_fold(events: Sequence[PipelineEvent]) -> FlatState:
    """Fold with ``match`` and ``attrs.evolve``."""
    s = FlatState()
    evolve = attrs.evolve
    for e in events:
        seq = s.sequence + 1
        match e:
            case TopicPublished():
                topics = s.topics if e.topic in s.topics else s.topics | {e.topic}
                s = evolve(s, sequence=seq, topics=topics, consecutive_malformed=0)
            case InvocationStarted():
                s = evolve(s, sequence=seq, attempt=s.attempt + 1, in_flight=True)
            case InvocationSucceeded():
                s = evolve(s, sequence=seq, in_flight=False)
            case InvocationFailed() | InvocationTimedOut():
                s = evolve(
                    s, sequence=seq, in_flight=False, retries=s.retries + 1, last_error="failed"
                )
            case PromptMaterialized():
                s = evolve(s, sequence=seq, step="invoke")
            case CheckpointSaved():
                s = evolve(s, sequence=seq, checkpoints=s.checkpoints + 1)
            case DevelopmentIterationStarted():
                s = evolve(
                    s,
                    sequence=seq,
                    phase="development",
                    step="prompt",
                    iteration=e.iteration,
                    retries=0,
                    attempt=0,
                )
            case DevelopmentIterationCompleted():
                s = evolve(s, sequence=seq, phase="commit_message", step="prompt")
            case ReviewPassStarted():
                s = evolve(s, sequence=seq, phase="review", review_pass=e.review_pass)
            case CommitCreated():
                s = evolve(s, sequence=seq, commits=s.commits + 1, step="begin")
            case OutputLineMalformed():
                s = evolve(
                    s,
                    sequence=seq,
                    malformed=s.malformed + 1,
                    consecutive_malformed=s.consecutive_malformed + 1,
                )
            case _:
                s = evolve(s, sequence=seq)
    return s


def dict_fold(events: Sequence[PipelineEvent]) -> dict[str, Any]:
    """Fold the same transitions into one mutable dict."""
    s: dict[str, Any] = {
        "sequence": 0,
        "phase": "planning",
        "step": "begin",
        "iteration": 0,
        "review_pass": 0,
        "retries": 0,
        "attempt": 0,
        "in_flight": False,
        "topics": set(),
        "malformed": 0,
        "consecutive_malformed": 0,
        "checkpoints": 0,
        "commits": 0,
        "last_error": None,
    }
    for e in events:
        s["sequence"] += 1
        t = type(e)
        if t is TopicPublished:
            s["topics"].add(e.topic)  # type: ignore[attr-defined]
            s["consecutive_malformed"] = 0
        elif t is InvocationStarted:
            s["attempt"] += 1
            s["in_flight"] = True
        elif t is InvocationSucceeded:
            s["in_flight"] = False
        elif t is InvocationFailed or t is InvocationTimedOut:
            s["in_flight"] = False
            s["retries"] += 1
            s["last_error"] = "failed"
        elif t is PromptMaterialized:
            s["step"] = "invoke"
        elif t is CheckpointSaved:
            s["checkpoints"] += 1
        elif t is DevelopmentIterationStarted:
            s["phase"], s["step"] = "development", "prompt"
            s["iteration"] = e.iteration  # type: ignore[attr-defined]
            s["retries"] = s["attempt"] = 0
        elif t is DevelopmentIterationCompleted:
            s["phase"], s["step"] = "commit_message", "prompt"
        elif t is ReviewPassStarted:
            s["phase"] = "review"
            s["review_pass"] = e.review_pass  # type: ignore[attr-defined]
        elif t is CommitCreated:
            s["commits"] += 1
            s["step"] = "begin"
        elif t is OutputLineMalformed:
            s["malformed"] += 1
            s["consecutive_malformed"] += 1
    return s
