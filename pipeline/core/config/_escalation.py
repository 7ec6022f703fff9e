"""``escalate`` in a ``[hats.NAME]`` table: the models a hat moves up to when its work bounces
(pure). :func:`ladders` makes the ``LoopPolicy.ladders`` a run records; :func:`ladder_problems`
names every mistake, one line each.

```toml
[hats.developer]
escalate = ["strong-model-4-1"]       # the rungs above the hat's own model
escalate_after = { review_issues = 2, blocked = 2, validation_failed = 1 }   # 0: not counted
step_down = true                        # a success moves the hat down a rung
```
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final, final

from attrs import frozen

from pipeline.events import (
    DEFAULT_BOUNCES,
    Count,
    Ladder,
    Role,
    topic_matches,
)

if TYPE_CHECKING:
    from pipeline.core.config._loop import HatConfig, HatsConfig

__all__ = ["EscalateAfter", "ladder_problems", "ladders"]

_MAX_BOUNCES: Final = 1000
"""The most bounces a ladder may wait for (more would never move a hat in any real run)."""


@final
@frozen(kw_only=True)
class EscalateAfter:
    """``escalate_after``: how many bounces of each kind move the hat up a rung (0: the kind
    does not count)."""

    review_issues: int = DEFAULT_BOUNCES
    """Review passes that found issues (a topology hat: wakes by one of its ``review_topics``)."""
    blocked: int = DEFAULT_BOUNCES
    """Tasks the hat reported blocked (``build.blocked``)."""
    validation_failed: int = DEFAULT_BOUNCES
    """Gates that blocked the hat's work, and failed final checks."""


_PLAIN_AFTER = EscalateAfter()


def ladders(hats: HatsConfig) -> tuple[Ladder, ...]:
    """The ladders of the hats that have ``escalate``: the developer's and a topology's."""
    named = [(Role.DEVELOPER.value, hats.developer), *hats.work.items()]
    return tuple(_ladder(name, hat) for name, hat in named if hat.escalate)


def _ladder(name: str, hat: HatConfig) -> Ladder:
    after = hat.escalate_after
    return Ladder(
        hat=name,
        models=hat.escalate,
        review_issues=Count(after.review_issues),
        blocked=Count(after.blocked),
        validation_failed=Count(after.validation_failed),
        review_topics=hat.review_topics,
        step_down=hat.step_down,
    )


def ladder_problems(key: str, hat: HatConfig, role: Role | None) -> list[str]:
    """Every problem with the ladder of the hat at ``key`` (``role``: a role's own hat; None:
    a hat of a topology), one line each."""
    if not hat.escalate:
        return [
            f"{key}.{name}: only a hat with escalate has it"
            for name, plain in (
                ("escalate_after", hat.escalate_after == _PLAIN_AFTER),
                ("review_topics", not hat.review_topics),
                ("step_down", not hat.step_down),
            )
            if not plain
        ]
    if role is not None and role is not Role.DEVELOPER:
        return [
            f"{key}.escalate: only the developer's work bounces (review issues, blocked tasks, "
            "failed validation); put the ladder in [hats.developer] or a hat with triggers"
        ]
    problems = [_model_problem(f"{key}.escalate", model) for model in hat.escalate]
    if len(set(hat.escalate)) != len(hat.escalate):
        problems.append(f"{key}.escalate: a model is named twice: {list(hat.escalate)}")
    after = hat.escalate_after
    counts = (after.review_issues, after.blocked, after.validation_failed)
    for name, count in zip(("review_issues", "blocked", "validation_failed"), counts, strict=True):
        if not 0 <= count <= _MAX_BOUNCES:
            problems.append(
                f"{key}.escalate_after.{name}: must be from 0 (not counted) to {_MAX_BOUNCES}, "
                f"got {count}"
            )
    if not any(counts):
        problems.append(f"{key}.escalate_after: every count is 0, so nothing would move the hat")
    elif role is None and not hat.review_topics and not any(counts[1:]):
        problems.append(
            f"{key}.escalate_after: only review_issues counts, and a hat with triggers has a "
            "review bounce only when woken by one of its review_topics: name them"
        )
    if hat.model is not None and hat.model in hat.escalate:
        problems.append(f"{key}.escalate: {hat.model!r} is the hat's own model (rung 0)")
    triggers = hat.triggers or ()
    for topic in hat.review_topics:
        if "*" not in topic and triggers and not any(topic_matches(t, topic) for t in triggers):
            problems.append(
                f"{key}.review_topics: {topic!r} matches none of the hat's triggers, so it "
                "never wakes it"
            )
    if role is Role.DEVELOPER and hat.review_topics:
        problems.append(
            f"{key}.review_topics: only a hat with triggers has it (the built-in review "
            "counts its own findings)"
        )
    return [problem for problem in problems if problem]


def _model_problem(key: str, model: str) -> str:
    if not model or any(c.isspace() or not c.isprintable() for c in model):
        return f"{key}: {model!r} is not a model name (empty, or spaces or control characters)"
    if model.startswith("-"):
        return f"{key}: {model!r} starts with '-', so a CLI would read it as an option"
    return ""
