"""Human-in-the-loop facts: questions, answers, timeouts and calls for intervention (pure data)."""

from __future__ import annotations

from typing import TypeAlias, final

from attrs import field, frozen

from pipeline.events.values import (
    INSTANT_VALIDATOR,
    ORDINAL_VALIDATOR,
    Instant,
    Ordinal,
    QuestionId,
)

__all__ = [
    "GuidanceGiven",
    "HumanEvent",
    "HumanInterventionRequired",
    "HumanQuestionAsked",
    "HumanResponseReceived",
    "HumanTimedOut",
]


@final
@frozen(kw_only=True)
class HumanQuestionAsked:
    """A question went to a human; the answer is due by ``deadline``."""

    question_id: QuestionId
    question: str
    deadline: Instant = field(validator=INSTANT_VALIDATOR)
    at: Instant = field(validator=INSTANT_VALIDATOR)


@final
@frozen(kw_only=True)
class HumanResponseReceived:
    """A human answered question ``question_id`` with ``text``."""

    question_id: QuestionId
    text: str
    at: Instant = field(validator=INSTANT_VALIDATOR)


@final
@frozen(kw_only=True)
class HumanTimedOut:
    """No answer to ``question_id`` arrived by its deadline."""

    question_id: QuestionId
    at: Instant = field(validator=INSTANT_VALIDATOR)


@final
@frozen(kw_only=True)
class HumanInterventionRequired:
    """The run cannot go on without a person (``reason`` and ``detail`` say why)."""

    reason: str
    detail: str
    at: Instant = field(validator=INSTANT_VALIDATOR)


@final
@frozen(kw_only=True)
class GuidanceGiven:
    """A person's guidance number ``number`` (``ralph guide``), given at ``given_at`` for the
    hat ``hat`` (a role's or a topology hat's name; None: whichever hat works next), reached
    the run: that hat's next prompt carries ``text``."""

    number: Ordinal = field(validator=ORDINAL_VALIDATOR)
    hat: str | None
    text: str
    given_at: Instant = field(validator=INSTANT_VALIDATOR)
    at: Instant = field(validator=INSTANT_VALIDATOR)


HumanEvent: TypeAlias = (
    HumanQuestionAsked
    | HumanResponseReceived
    | HumanTimedOut
    | HumanInterventionRequired
    | GuidanceGiven
)
"""Facts about people in the loop."""
