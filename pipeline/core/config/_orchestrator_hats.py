"""ralph-orchestrator hats translated into ralph's ``[hats.ID]`` topology tables (pure).

The hat id is the table's key; triggers, publishes, ``default_publishes``, ``max_activations``
and instructions keep their meaning. A hat that keeps no trigger is left out: a hat of a ralph
topology needs one, and ralph-orchestrator never wakes a hat without one either (the topics
nobody triggers on go to its coordinator, which the translation adds: see
``_orchestrator_coordinator``). ``subscribes_to``, the name ralph-orchestrator's prompts and
test scenarios give a hat's triggers, is read as its triggers when it has none. A
``default_publishes`` that is the completion promise becomes ``task.resume``: neither tool
completes a run because a hat published nothing; ralph-orchestrator asks again with
``task.resume``, which the coordinator takes up here.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Final

from pipeline.core.config._orchestrator_agents import Agents, hat_backend
from pipeline.core.config._orchestrator_reading import (
    Reader,
    key_path,
    kind,
    topic_problem,
    trigger_problem,
)
from pipeline.events import TASK_RESUME_TOPIC

__all__ = ["translate_hat"]

_HAT_ID = re.compile(r"[A-Za-z0-9_:-]+")

_NO_WAVES: Final = "no equivalent (ralph runs one activation at a time, never agent waves)"
_UNTRANSLATED: Final[Mapping[str, str]] = {
    "scratchpad": "no equivalent (ralph keeps its state in the event log)",
    "disallowed_tools": (
        "no equivalent (ralph does not restrict an agent's tools per hat; "
        "configure the agent's own permissions)"
    ),
    "timeout": "no equivalent per hat; set timeout_s under [agents.NAME]",
    "concurrency": _NO_WAVES,
    "aggregate": _NO_WAVES,
    "import": "hat imports are not followed; copy the imported hat's settings into this hat",
}
"""Hat settings with no equivalent in ralph, and why."""

_TRANSLATED: Final = frozenset(
    (
        "name",
        "description",
        "triggers",
        "publishes",
        "instructions",
        "extra_instructions",
        "default_publishes",
        "max_activations",
        "backend",
        "backend_args",
        "args",
        "subscribes_to",
    )
)


def _instructions(instructions: str, extra: tuple[str, ...]) -> str:
    """``instructions`` followed by each of ``extra``, a blank line between two."""
    if not extra:
        return instructions
    parts = [part for part in (instructions, *extra) if part.strip()]
    if not parts:
        return ""
    text = "\n\n".join(part.rstrip("\n") for part in parts)
    return text + "\n" if parts[-1].endswith("\n") else text


def _patterns(reader: Reader, patterns: tuple[str, ...], path: str) -> list[str]:
    """The patterns ralph can keep as they are; each other one is noted."""
    kept = []
    for pattern in patterns:
        problem = trigger_problem(pattern)
        if problem is None:
            kept.append(pattern)
        else:
            reader.skip(path, f"{problem}; left out")
    return kept


def _triggers(found: Reader, table: Mapping[str, object], path: str) -> list[str]:
    """The hat's triggers, or its ``subscribes_to`` when it gives no triggers (noted)."""
    triggers = found.texts(table, "triggers", path)
    subscribed = found.texts(table, "subscribes_to", path)
    if triggers is None and subscribed is not None:
        found.note(
            f"{path}.subscribes_to",
            "read as its triggers (ralph-orchestrator's prompts and test scenarios name a "
            "hat's triggers so; its configuration reads triggers only)",
        )
        return _patterns(found, subscribed, f"{path}.subscribes_to")
    if subscribed is not None:
        found.skip(f"{path}.subscribes_to", "the hat's triggers are given; not translated")
    return _patterns(found, triggers or (), f"{path}.triggers")


def translate_hat(
    reader: Reader, hat_id: str, value: object, agents: Agents, promise: str
) -> dict[str, Any] | None:
    """The ``[hats.ID]`` table of the hat ``hat_id`` (None: the hat is left out, and why is
    noted) in a run whose completion promise is ``promise``; the agent its backend names is
    added to ``agents``."""
    path = key_path("hats", hat_id)
    if not isinstance(value, dict):
        reader.fail(path, f"expected a hat (a mapping), got {kind(value)}")
    table = reader.table(value, path)
    notes = reader.fresh()  # the hat's own: a hat left out notes only its triggers
    triggers = _triggers(notes, table, path)
    name = notes.text(table, "name", path)
    description = notes.text(table, "description", path)
    given = notes.texts(table, "publishes", path) or ()
    instructions = notes.text(table, "instructions", path) or ""
    extra = notes.texts(table, "extra_instructions", path) or ()
    default = notes.text(table, "default_publishes", path)
    max_activations = notes.count(table, "max_activations", path)
    if table.get("backend_args") is not None and table.get("args") is not None:
        notes.fail(path, "give backend_args or its alias args, not both")
    args = notes.texts(table, "backend_args", path) or notes.texts(table, "args", path) or ()

    left_out = None
    if not _HAT_ID.fullmatch(hat_id):
        left_out = f"{hat_id!r} cannot name a ralph hat (letters, digits, _ : - only)"
    elif not triggers:
        # ralph-orchestrator hands topics nobody triggers on to its coordinator; ralph has none.
        why = "none of its triggers can be kept" if notes.untranslated else "it has no triggers"
        left_out = f"{why}, and a hat of a ralph topology needs at least one"
    if left_out is not None:
        # The backend's shape is still checked, but no agent is added for a hat left out.
        hat_backend(reader.fresh(), table.get("backend"), f"{path}.backend", hat_id, Agents())
        reader.untranslated.extend(notes.untranslated)
        reader.skip(path, f"left out: {left_out}")
        return None

    publishes = _patterns(notes, given, f"{path}.publishes")

    if name is not None and name != hat_id:
        notes.skip(
            f"{path}.name",
            f"the display name {name!r} has no equivalent (ralph names a hat by its id)",
        )
    default_problem = None if default is None else topic_problem(default)
    if default_problem is not None:
        notes.skip(f"{path}.default_publishes", f"{default_problem}; left out")
    elif default == promise:
        default = TASK_RESUME_TOPIC
        notes.skip(
            f"{path}.default_publishes",
            f"the completion promise {promise!r}: a run never completes because a hat "
            f"published nothing (ralph-orchestrator asks again with {TASK_RESUME_TOPIC}); "
            f"{TASK_RESUME_TOPIC!r} is written instead, for the coordinator",
        )
    if max_activations == 0:
        notes.skip(
            f"{path}.max_activations",
            "0 never lets the hat run in ralph-orchestrator, and means no limit in ralph",
        )
    agent, backend_args = hat_backend(
        notes, table.get("backend"), f"{path}.backend", hat_id, agents
    )
    # One agent at a time is what ralph does anyway.
    asked = {key: value for key, value in table.items() if (key, value) != ("concurrency", 1)}
    notes.rest(asked, path, _TRANSLATED, _UNTRANSLATED)
    reader.untranslated.extend(notes.untranslated)
    reader.notes.extend(notes.notes)

    hat: dict[str, Any] = {"description": description} if description else {}
    hat["triggers"] = triggers
    hat["publishes"] = publishes
    if default is not None and default_problem is None:
        hat["default_publishes"] = default
    if max_activations:
        hat["max_activations"] = max_activations
    text = _instructions(instructions, extra)
    if text:
        hat["instructions"] = text
    if agent is not None:
        hat["chain"] = [agent]
    if backend_args or args:
        hat["args"] = [*backend_args, *args]
    return hat
