"""Who decides what happens in the simulated world: choosers (seeded random, hypothesis's
draws, a script) and a fake clock (pure)."""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Protocol, TypeVar

from attrs import define, field, frozen

T = TypeVar("T")


class Chooser(Protocol):
    """Makes the world's choices."""

    def pick(self, options: Sequence[T], what: str) -> T:
        """One of ``options`` (``what`` names the choice, for logs and shrinking)."""
        ...

    def number(self, low: int, high: int, what: str) -> int:
        """A whole number from ``low`` to ``high`` inclusive."""
        ...


@define(kw_only=True)
class RandomChooser:
    """Choices from a seeded pseudo-random generator, optionally weighted."""

    seed: int
    weights: dict[str, Sequence[float]] = field(factory=dict)
    _random: random.Random = field(init=False)

    def __attrs_post_init__(self) -> None:
        self._random = random.Random(self.seed)

    def pick(self, options: Sequence[T], what: str) -> T:
        """One of ``options``, weighted by ``weights[what]`` when given."""
        weights = self.weights.get(what)
        if weights is not None and len(weights) == len(options):
            return self._random.choices(list(options), weights=list(weights))[0]
        return self._random.choice(list(options))

    def number(self, low: int, high: int, what: str) -> int:
        """A uniform whole number from ``low`` to ``high``."""
        return self._random.randint(low, high)


@frozen
class Always:
    """A scripted answer given every time its choice is asked from there on (never used up)."""

    answer: object


@define(kw_only=True)
class ScriptedChooser:
    """Choices read from a script: ``answers[what]`` is used up in order, then defaults apply.

    The default is the first option (every outcome list starts with the happy one) and the
    lowest number, so a script names only the choices that differ from a smooth run. An
    :class:`Always` answer is given every time from there on. :meth:`check_used` after the run
    refuses a script that named a choice the world never made or left answers unused.
    """

    answers: dict[str, list[object]] = field(factory=dict)
    asked: list[str] = field(factory=list)

    def pick(self, options: Sequence[T], what: str) -> T:
        """The next scripted answer for ``what``, else the first option."""
        self.asked.append(what)
        queue = self.answers.get(what)
        if queue:
            answer = _next_answer(queue)
            for option in options:
                if option == answer:
                    return option
            raise ValueError(f"scripted answer {answer!r} for {what!r} is not in {options!r}")
        return options[0]

    def number(self, low: int, high: int, what: str) -> int:
        """The next scripted number for ``what``, else ``low``."""
        self.asked.append(what)
        queue = self.answers.get(what)
        if queue:
            answer = _next_answer(queue)
            if not isinstance(answer, int) or not low <= answer <= high:
                raise ValueError(f"scripted answer {answer!r} for {what!r} is not in {low}..{high}")
            return answer
        return low

    def check_used(self) -> None:
        """Raise ``ValueError`` when the script named a choice the world never made (a
        misspelled key would otherwise leave the run on the happy path unnoticed) or left
        answers unused (the run ended before the scripted story was told)."""
        asked = set(self.asked)
        problems = [
            f"{what!r} was never asked (the world's choices: {', '.join(sorted(asked))})"
            for what in sorted(self.answers)
            if what not in asked
        ]
        problems += [
            f"{what!r} has {len(left)} answers left unused: {left!r}"
            for what, left in sorted(self.answers.items())
            if left and not isinstance(left[0], Always) and what in asked
        ]
        if problems:
            raise ValueError(
                "the scripted world's script does not fit the run: " + "; ".join(problems)
            )


def _next_answer(queue: list[object]) -> object:
    """The first answer of ``queue``, used up unless it is :class:`Always`."""
    if isinstance(queue[0], Always):
        return queue[0].answer
    return queue.pop(0)
