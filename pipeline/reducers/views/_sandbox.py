"""The run's sandbox: what its agents ran in, as checked when it started, and the connections
the sandbox refused them (pure). ``ralph report``, ``ralph status`` and the live panel show it.

A run records ``SandboxChecked`` right after it starts, and again right after each
resumption, unless ``[sandbox] mode = "off"``: a
log with none (the sandbox off in ``ralph.toml``, or a run older than schema 12) has no check,
and nothing of the sandbox is shown for it. ``ConnectionRefused`` follows an invocation whose
connections the sandbox's proxy refused, one per endpoint; they are added up per endpoint,
role and agent, with the invocations they came from numbered as the timeline numbers them.
An endpoint is the text of the agent's own request: untrusted.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TypeAlias, final

import attrs
from attrs import frozen

from pipeline.events import (
    AgentName,
    ConnectionRefused,
    Instant,
    InvocationStarted,
    PipelineEvent,
    Role,
    SandboxChecked,
)

__all__ = ["RefusedConnection", "SandboxCheck", "SandboxView", "sandbox_view"]


SandboxCheck: TypeAlias = SandboxChecked
"""What the run's agents ran in, as decided when it started: the fact itself, which holds
every field the view shows (the words it said, ``on (bubblewrap 0.8.0; network: ...)`` or
``off (`` why and the fix ``)``, the endpoints, the withheld names)."""


@final
@frozen(kw_only=True)
class RefusedConnection:
    """The connections of one agent in one role to one endpoint that the sandbox refused."""

    endpoint: str
    """``host:port`` as the agent asked for it: its own text, untrusted."""
    role: Role
    agent: AgentName
    count: int
    """How many connections were refused, over the whole run."""
    invocations: tuple[int, ...] = ()
    """The invocations they were refused in (one ``ConnectionRefused`` each), numbered as the
    timeline numbers them (a refusal recorded before any invocation started, in a damaged
    log, names none)."""
    first_at: Instant
    last_at: Instant


@final
@frozen(kw_only=True)
class SandboxView:
    """The run's sandbox checks (one, recorded at its start; none with the sandbox off in
    ``ralph.toml``) and its refused connections, in the order first refused."""

    checks: tuple[SandboxCheck, ...] = ()
    refused: tuple[RefusedConnection, ...] = ()

    @property
    def check(self) -> SandboxCheck | None:
        """The last check recorded (None: the run recorded none)."""
        return self.checks[-1] if self.checks else None

    @property
    def recorded(self) -> bool:
        """Whether the log says anything of the sandbox (a run whose log says nothing is
        shown as runs were before it had one)."""
        return bool(self.checks or self.refused)

    @property
    def refused_count(self) -> int:
        """How many connections were refused in all."""
        return sum(r.count for r in self.refused)


def sandbox_view(events: Iterable[PipelineEvent]) -> SandboxView:
    """The sandbox of a run's ``events``: its checks and its refused connections."""
    checks: list[SandboxCheck] = []
    refused: dict[tuple[str, Role, AgentName], RefusedConnection] = {}
    invocation = 0  # the number of the invocation last started, as the timeline counts them
    for event in events:
        match event:
            case InvocationStarted():
                invocation += 1
            case SandboxChecked():
                checks.append(event)
            case ConnectionRefused():
                key = (event.endpoint, event.role, event.agent)
                before = refused.get(key)
                refused[key] = _refused(event, invocation, before)
            case _:
                pass
    return SandboxView(checks=tuple(checks), refused=tuple(refused.values()))


def _refused(
    event: ConnectionRefused, invocation: int, before: RefusedConnection | None
) -> RefusedConnection:
    """``before`` with ``event`` added (a new entry when it is the first)."""
    numbered = (invocation,) if invocation else ()
    if before is None:
        return RefusedConnection(
            endpoint=event.endpoint,
            role=event.role,
            agent=event.agent,
            count=event.count,
            invocations=numbered,
            first_at=event.at,
            last_at=event.at,
        )
    return attrs.evolve(
        before,
        count=before.count + event.count,
        invocations=tuple(dict.fromkeys((*before.invocations, *numbered))),
        last_at=event.at,
    )
