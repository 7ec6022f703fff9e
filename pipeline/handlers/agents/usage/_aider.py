"""Usage from aider's text output (pure).

After each model request aider prints a line such as::

    Tokens: 1.5k sent, 300 cache hit, 80 received. Cost: $0.0038 message, $0.0038 session.

``sent`` counts every prompt token, those read from the cache (``cache hit``) or written to
it (``cache write``) included, so those are subtracted to give the input tokens. Counts of
1,000 or more are rounded by aider (``1.5k``, ``15k``): the figures are as exact as it prints
them. The ``Cost:`` part appears only when aider knows the model's prices; the last
``session`` cost is the invocation's (one aider process is one session). Without it the cost
is not reported. ``Model: NAME with ... edit format`` (or ``Main model:``) names the model;
each ``Tokens:`` line is one turn.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Final

from pipeline.handlers.agents.usage._figures import UsageFigures

__all__ = ["parse_aider"]

_ANSI: Final = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
_COUNT: Final = r"(\d+(?:\.\d+)?k?)"
_TOKENS: Final = re.compile(
    rf"Tokens: {_COUNT} sent(?:, {_COUNT} cache write)?(?:, {_COUNT} cache hit)?"
    rf", {_COUNT} received\."
)
_COST: Final = re.compile(r"Cost: \$(\d+(?:\.\d+)?) message, \$(\d+(?:\.\d+)?) session\.")
_MODEL: Final = re.compile(r"^(?:Main model|Model): (\S+) with ")


def _tokens(text: str | None) -> int:
    if not text:
        return 0
    if text.endswith("k"):
        return round(float(text[:-1]) * 1000)
    return int(text)


def parse_aider(lines: Iterable[bytes]) -> UsageFigures:
    """The usage aider's output reports (every field None when it says nothing)."""
    turns = 0
    sent = received = cache_write = cache_hit = 0
    session_cost: float | None = None
    model: str | None = None
    for raw in lines:
        line = _ANSI.sub("", raw.decode("utf-8", "replace")).strip()
        if model is None and (named := _MODEL.match(line)):
            model = named[1].rstrip(",")
        counted = _TOKENS.search(line)
        if counted:
            turns += 1
            sent += _tokens(counted[1])
            cache_write += _tokens(counted[2])
            cache_hit += _tokens(counted[3])
            received += _tokens(counted[4])
        costed = _COST.search(line)
        if costed:
            session_cost = float(costed[2])
    if not turns:
        return UsageFigures(model=model, cost_usd=session_cost)
    return UsageFigures(
        model=model,
        input_tokens=max(0, sent - cache_hit - cache_write),
        output_tokens=received,
        cache_read_tokens=cache_hit,
        cache_write_tokens=cache_write,
        turns=turns,
        cost_usd=session_cost,
    )
