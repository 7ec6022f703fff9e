"""Escalation ladders (pure data): ``escalate`` in a ``[hats.NAME]`` table, recorded in
``RunStarted`` as ``LoopPolicy.ladders`` so that replay needs no configuration.

A ladder lists the models a hat moves up to when its work bounces: the reviewer finds issues,
the hat reports its task blocked, or a gate or the final check refuses the work. The reducer
counts the bounces and moves the hat up one rung when one kind reaches its count; the next
invocation of the hat runs the rung's model (see ``docs/architecture/escalation.md``).
"""

from __future__ import annotations

from typing import Any, Final, final

from attrs import Attribute, field, frozen

from pipeline.events.values import COUNT_VALIDATOR, Count

__all__ = ["DEFAULT_BOUNCES", "Ladder", "is_model_name", "model_name"]

DEFAULT_BOUNCES: Final = 2
"""Bounces of one kind that move a hat up one rung unless its ladder says otherwise."""


def is_model_name(model: str) -> bool:
    """Whether ``model`` can name a model: printable, no blanks, not an option."""
    blank = any(c.isspace() or not c.isprintable() for c in model)
    return bool(model) and not blank and not model.startswith("-")


def model_name(_instance: object, attribute: Attribute[Any], value: str) -> None:
    """An attrs validator: ``value`` must be a model name (:func:`is_model_name`)."""
    if not is_model_name(value):
        raise ValueError(f"{attribute.name}: {value!r} is not a model name")


def _models(_instance: object, _attribute: Attribute[Any], value: tuple[str, ...]) -> None:
    if not value:
        raise ValueError("escalate: a ladder needs at least one model to move up to")
    for model in value:
        if not is_model_name(model):
            raise ValueError(f"escalate: {model!r} is not a model name")


@final
@frozen(kw_only=True)
class Ladder:
    """The models hat ``hat`` moves up to, one rung per ``review_issues``, ``blocked`` or
    ``validation_failed`` bounces of that kind (0: that kind does not count).

    Rung 0 is the hat's own model (its ``model``, else its agent's); rung ``k`` is
    ``models[k - 1]``. ``review_topics`` are, for a hat of a user's topology, the topics that
    bring its work back from review (being woken by one is a review bounce). With
    ``step_down``, a success (a clean review, or a topology hat woken for new work after work
    that did not bounce) moves the hat down a rung.
    """

    hat: str
    models: tuple[str, ...] = field(validator=_models)
    review_issues: Count = field(default=Count(DEFAULT_BOUNCES), validator=COUNT_VALIDATOR)
    blocked: Count = field(default=Count(DEFAULT_BOUNCES), validator=COUNT_VALIDATOR)
    validation_failed: Count = field(default=Count(DEFAULT_BOUNCES), validator=COUNT_VALIDATOR)
    review_topics: tuple[str, ...] = ()
    step_down: bool = False

    def __attrs_post_init__(self) -> None:
        if not (self.review_issues or self.blocked or self.validation_failed):
            raise ValueError("escalate_after: at least one kind of bounce must count")

    def model(self, rung: int) -> str | None:
        """The model of ``rung`` (None: rung 0, the hat's own model)."""
        if rung <= 0:
            return None
        return self.models[min(rung, len(self.models)) - 1]
