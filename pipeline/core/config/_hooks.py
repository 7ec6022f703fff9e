"""``[[hooks]]`` and ``[notify]``: the person's scripts run at points of a run (pure).

Checked when the file is parsed (:func:`check_hooks`, each mistake naming its key) and
turned into the :class:`~pipeline.events.HookSpec` list a run records in ``RunStarted``
(``docs/architecture/hooks.md``). ``[notify]`` is a warning hook named ``notify`` at each
point it lists.
"""

from __future__ import annotations

import re
from typing import Final, final

from attrs import frozen

from pipeline.events import (
    BLOCKABLE,
    SUSPENDABLE,
    Count,
    HookAction,
    HookPoint,
    HookSpec,
)

__all__ = ["NOTIFY_POINTS", "HookConfig", "NotifyConfig", "check_hooks", "hook_specs"]

_NAME: Final = re.compile(r"[A-Za-z0-9_-]{1,64}")
_POINTS: Final = ", ".join(point.value for point in HookPoint)

NOTIFY_POINTS: Final = (HookPoint.RUN_END, HookPoint.QUESTION_ASKED, HookPoint.LIMIT_WAIT)
"""Where ``[notify]`` runs unless its ``on`` says otherwise: the run ended, it asks a person,
it waits on a provider's usage window."""


@final
@frozen(kw_only=True)
class HookConfig:
    """``[[hooks]]``: one hook."""

    name: str
    point: HookPoint
    """Where it runs: run_start, before_invocation, after_invocation, before_commit,
    completion_claimed, on_failure, run_end, question_asked or limit_wait."""
    command: tuple[str, ...]
    """The command, as an argv (never a shell string)."""
    timeout_s: int = 60
    on_error: HookAction = HookAction.WARN
    """``warn``: recorded, the run goes on; ``block``: the step does not happen; ``suspend``:
    the run stops before the step, resumably."""


@final
@frozen(kw_only=True)
class NotifyConfig:
    """``[notify]``: a command run, with the run's news as JSON on its standard input, when
    the run ends, asks a person or waits on a usage window (once each)."""

    command: tuple[str, ...] = ()
    on: tuple[str, ...] = tuple(point.value for point in NOTIFY_POINTS)
    timeout_s: int = 30


def check_hooks(hooks: tuple[HookConfig, ...], notify: NotifyConfig) -> list[str]:
    """Every problem with ``[[hooks]]`` and ``[notify]``, one line each, naming the key."""
    problems: list[str] = []
    seen: set[tuple[str, HookPoint]] = set()
    for index, hook in enumerate(hooks):
        key = f"hooks[{index}]"
        if not _NAME.fullmatch(hook.name):
            problems.append(f"{key}.name: {hook.name!r} is not 1 to 64 letters, digits, _ or -")
        if (hook.name, hook.point) in seen or hook.name == "notify":
            problems.append(f"{key}.name: {hook.name!r} is taken at {hook.point.value}")
        seen.add((hook.name, hook.point))
        if not hook.command or not hook.command[0].strip():
            problems.append(f"{key}.command: must name a program")
        point = hook.point.value
        if hook.on_error is HookAction.BLOCK and hook.point not in BLOCKABLE:
            problems.append(
                f"{key}.on_error: a {point} hook has no step to block (warn or suspend)"
            )
        if hook.on_error is HookAction.SUSPEND and hook.point not in SUSPENDABLE:
            problems.append(f"{key}.on_error: a {point} hook cannot suspend an ended run")
    if notify.command and not notify.command[0].strip():
        problems.append("notify.command: must name a program")
    for where in notify.on:
        if where not in {p.value for p in HookPoint}:
            problems.append(f"notify.on: {where!r} is not one of {_POINTS}")
    return problems


def hook_specs(hooks: tuple[HookConfig, ...], notify: NotifyConfig) -> tuple[HookSpec, ...]:
    """The hooks a run records (of a configuration :func:`check_hooks` found sound)."""
    specs = [
        HookSpec(
            name=hook.name,
            point=hook.point,
            argv=hook.command,
            timeout_s=Count(hook.timeout_s),
            on_error=hook.on_error,
        )
        for hook in hooks
    ]
    if notify.command:
        specs += [
            HookSpec(
                name="notify",
                point=HookPoint(where),
                argv=notify.command,
                timeout_s=Count(notify.timeout_s),
            )
            for where in dict.fromkeys(notify.on)
        ]
    return tuple(specs)
