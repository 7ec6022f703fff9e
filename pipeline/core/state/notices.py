"""What ralph tells an agent in its next prompt, beside the prompt itself: notices (pure
data), and which of them a prompt carries."""

from __future__ import annotations

from typing import Final, final

from attrs import field, frozen

from pipeline.events.values import COUNT_VALIDATOR, Count, Role

__all__ = ["MAX_NOTICES", "Notice", "notices_for"]


MAX_NOTICES: Final = 10
"""How many notices, the most recent, the next prompt carries."""


@final
@frozen(kw_only=True)
class Notice:
    """What ralph tells the agent in its next prompt, also shown in the topic log as ``topic``
    with ``text`` as its payload: a scope violation, a refused completion, an abandoned task, a
    person's answer or a question's timeout."""

    topic: str
    text: str
    line_number: Count = field(default=Count(0), validator=COUNT_VALIDATOR)
    """The events-file line the notice is about (0: none, a notice of no agent's line)."""
    role: Role | None = None
    """The hat the notice is for (its next prompt carries it); None: the next working prompt."""
    hat: str | None = None
    """The topology hat it is for, of ``role`` (None: whichever hat of the role works next)."""


def notices_for(
    notices: tuple[Notice, ...], role: Role, hat: str | None = None
) -> tuple[Notice, ...]:
    """The notices a prompt for ``role`` (in topology hat ``hat``) carries: those addressed to
    it, and, unless it is the committer's (a commit message is no place to act on them), the
    unaddressed ones and the planner's (planning happens once: its notices go to whoever works
    next); a notice for another topology hat waits for that hat."""
    return tuple(
        n
        for n in notices
        if (n.role is role or (role is not Role.COMMITTER and n.role in (None, Role.PLANNER)))
        and (n.hat is None or n.hat == hat)
    )
