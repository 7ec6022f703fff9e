"""The handoff between the workflows of a chain (``ralph run --preset a,b``): what the next
run's prompt says about the run before it (pure: a run's events in, Markdown out).

The next workflow's agents see the same repository, so the handoff does not repeat the work:
it says which workflow ran, how it ended, the hats that worked, and the last topics it
published (the completion's payload is its own summary), each payload on one line and cut
short, so that a long report does not crowd out the task.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable
from typing import Final

import orjson

from pipeline.events import HatActivated, PipelineEvent, RunCompleted, TopicPublished

__all__ = ["handoff_section"]

LAST_TOPICS: Final = 5
"""How many of the run's last topics the handoff shows."""

PAYLOAD_CHARS: Final = 500
"""How much of each payload it shows."""


def _one_line(payload: object) -> str:
    text = payload if isinstance(payload, str) else orjson.dumps(payload).decode()
    flat = " ".join(text.split())
    if len(flat) > PAYLOAD_CHARS:
        flat = flat[: PAYLOAD_CHARS - 3].rstrip() + "..."
    return flat or "(no payload)"


def handoff_section(preset: str, run_id: str, events: Iterable[PipelineEvent]) -> str:
    """The section a chain adds to the next run's prompt about the run ``run_id`` of the
    workflow ``preset``, from that run's ``events``."""
    woken: list[str] = []
    topics: list[tuple[str, object]] = []
    ended = "not finished"
    for event in events:
        if isinstance(event, HatActivated):
            woken.append(event.hat)
        elif isinstance(event, TopicPublished):
            topics.append((event.topic, event.payload.value))
        elif isinstance(event, RunCompleted):
            ended = event.reason.value if event.reason is not None else "finished"
    lines = [
        "",
        f"## Before this run: the workflow `{preset}`",
        "",
        f"The workflow `{preset}` worked on this task before this run (run {run_id}; it ended "
        f"`{ended}`). Its work is in the repository: build on it, do not redo it.",
    ]
    if woken:
        # In activation order, a hat working several times in a row named once.
        order = ", ".join(hat for hat, _ in itertools.groupby(woken))
        lines += ["", f"Its hats worked in this order: {order}."]
    if topics:
        lines += ["", "The last topics it published:", ""]
        lines += [f"- `{topic}`: {_one_line(payload)}" for topic, payload in topics[-LAST_TOPICS:]]
    return "\n".join(lines) + "\n"
