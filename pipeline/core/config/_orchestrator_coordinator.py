"""ralph-orchestrator's coordinator, Ralph, as a hat of the translated topology (pure).

ralph-orchestrator always has a built-in hat, Ralph, subscribed to every topic: a topic some
configured hat subscribes to goes to that hat, and every other one goes to Ralph (the first
topic when no hat starts on it, a topic nobody subscribes to, a hat's ``<hat>.exhausted``,
the ``task.resume`` it sends when an iteration published nothing). Ralph hands work on by
publishing a topic a hat subscribes to, does the work itself when there are no hats (its
solo mode), and may publish the completion promise.

The translation gives the topology that hat, named ``coordinator`` (or ``ralph-coordinator``
when a hat of the file has that name), and makes it ``[loop] coordinator``:

- its trigger is ``*``, which ralph ranks below every other trigger, so it wakes on exactly
  the topics no other hat triggers on (``task.resume`` when a hat of the file already
  triggers on ``*``: the coordinator setting still sends it the topics nobody triggers on);
- it publishes every topic (or pattern) the hats trigger on, ``task.resume`` and the
  completion promise;
- its ``default_publishes`` is ``task.resume``: an activation of it that publishes nothing
  wakes it again, as ralph-orchestrator's recovery wakes Ralph, so alone it loops until it
  publishes the completion promise;
- its instructions say its part, and list the hats with what wakes them and what they
  publish, as the table ralph-orchestrator shows Ralph does.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from pipeline.events import TASK_RESUME_TOPIC

__all__ = ["coordinator_hat", "coordinator_name"]

_WILDCARD: Final = "*"
_NAMES: Final = ("coordinator", "ralph-coordinator")


def coordinator_name(hats: Mapping[str, object]) -> str:
    """The name of the coordinator hat: the first of ``coordinator``, ``ralph-coordinator``,
    ``ralph-coordinator-2``, ... that names none of ``hats``."""
    for name in _NAMES:
        if name not in hats:
            return name
    number = 2
    while f"{_NAMES[-1]}-{number}" in hats:
        number += 1
    return f"{_NAMES[-1]}-{number}"


def _code(topics: list[str]) -> str:
    return ", ".join(f"`{topic}`" for topic in topics) or "nothing"


def _instructions(hats: Mapping[str, Mapping[str, Any]], promise: str) -> str:
    if not hats:
        return (
            "You are the loop's only hat, as Ralph is in ralph-orchestrator when no hats are "
            "configured. Each activation starts afresh: do one atomic piece of the task, check "
            "it, and stop; ralph commits your work and wakes you again with "
            f"`{TASK_RESUME_TOPIC}`. When the whole task is done and checked, publish "
            f"`{promise}`.\n"
        )
    lines = [
        "You coordinate, as Ralph does in ralph-orchestrator: you get every topic no other "
        "hat triggers on (the run's first topic when no hat starts on it, a topic nobody "
        f"takes up, a hat's exhaustion, `{TASK_RESUME_TOPIC}` after a hat published nothing). "
        "Do not do a hat's work yourself: hand the work on by publishing one topic a hat "
        f"triggers on, then stop. When the whole task is done and checked, publish "
        f"`{promise}`.",
        "",
        "The hats:",
    ]
    for name, hat in hats.items():
        line = (
            f"- `{name}`: triggers on {_code(hat['triggers'])}; "
            f"publishes {_code(hat['publishes'])}."
        )
        description = hat.get("description", "")
        if description.strip():
            line += " " + " ".join(description.split())
        lines.append(line)
    return "\n".join(lines) + "\n"


def coordinator_hat(hats: Mapping[str, Mapping[str, Any]], promise: str) -> dict[str, Any]:
    """The ``[hats.NAME]`` table of the coordinator of a topology with ``hats`` (the translated
    hats' tables, by name) and the completion promise ``promise``."""
    triggers = [trigger for hat in hats.values() for trigger in hat["triggers"]]
    publishes = [t for t in triggers if t != _WILDCARD] + [TASK_RESUME_TOPIC, promise]
    return {
        "description": (
            "ralph-orchestrator's coordinator (Ralph): takes every topic no other hat "
            "triggers on, and may complete the run."
        ),
        "triggers": [TASK_RESUME_TOPIC if _WILDCARD in triggers else _WILDCARD],
        "publishes": list(dict.fromkeys(publishes)),
        "default_publishes": TASK_RESUME_TOPIC,
        "instructions": _instructions(hats, promise),
    }
