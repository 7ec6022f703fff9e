"""Lifecycle facts: a run started, was interrupted, resumed, salvaged or completed (pure data)."""

from __future__ import annotations

from typing import TypeAlias, final

from attrs import field, frozen
from attrs.validators import optional

from pipeline.events.escalation import model_name
from pipeline.events.policy import LoopPolicy
from pipeline.events.sandbox import SandboxMode
from pipeline.events.values import (
    COUNT_VALIDATOR,
    INSTANT_VALIDATOR,
    OPTIONAL_COUNT_VALIDATOR,
    AgentName,
    Budget,
    Count,
    Digest,
    Instant,
    LogPosition,
    RoleChain,
    RunId,
    TerminationReason,
)

__all__ = [
    "LifecycleEvent",
    "RunAbandoned",
    "RunCompleted",
    "RunForked",
    "RunInterrupted",
    "RunResumed",
    "RunSalvaged",
    "RunStarted",
    "SandboxChecked",
]


@final
@frozen(kw_only=True)
class RunStarted:
    """A run began with this configuration; everything replay needs is in the log from here on."""

    run_id: RunId
    config_digest: Digest
    prompt_digest: Digest
    budget: Budget
    chains: tuple[RoleChain, ...]
    rebase_onto: str | None
    loop: LoopPolicy
    """Hats, the completion gate, cancellation, loop detectors and the human timeout."""
    at: Instant = field(validator=INSTANT_VALIDATOR)


@final
@frozen(kw_only=True)
class RunInterrupted:
    """The run was stopped from outside (a signal, an operator); it can be resumed."""

    reason: str
    at: Instant = field(validator=INSTANT_VALIDATOR)


@final
@frozen(kw_only=True)
class RunAbandoned:
    """A person gave the run up (``ralph abandon``): it finalizes as ``abandoned`` and is
    never resumed; ``reason`` says why."""

    reason: str
    at: Instant = field(validator=INSTANT_VALIDATOR)


@final
@frozen(kw_only=True)
class RunResumed:
    """A new process took the run up again from a checkpoint (or from the start of the log)."""

    checkpoint_sequence: LogPosition | None = field(validator=OPTIONAL_COUNT_VALIDATOR)
    at: Instant = field(validator=INSTANT_VALIDATOR)


@final
@frozen(kw_only=True)
class RunSalvaged:
    """Only the first ``kept`` events of the run's damaged log in ``source`` were copied here.

    ``ralph salvage`` copied every event before the damage from the store ``source`` (its
    label, no password) into this store; the facts after them are lost, and ``reason`` says
    what was wrong (bounded). Bookkeeping like a resumption: it changes no phase and effect
    ids do not count it."""

    source: str
    kept: Count = field(validator=COUNT_VALIDATOR)
    reason: str
    at: Instant = field(validator=INSTANT_VALIDATOR)


@final
@frozen(kw_only=True)
class RunForked:
    """This run began as a copy of the first ``at_sequence`` facts of run ``source_run``
    (``ralph fork``), in a git worktree on ``branch`` at ``commit``, the commit recorded by
    then. It changes no phase. ``agent`` goes first in every chain of the fork from here on
    (the chains' own agents stay its fallbacks), ``model`` is what every invocation of the
    fork asks for unless a ladder's rung says otherwise, and ``prompt_digest`` is that of the
    fork's new prompt (None each: the source's)."""

    source_run: RunId
    at_sequence: Count = field(validator=COUNT_VALIDATOR)
    commit: str
    branch: str
    agent: AgentName | None = None
    model: str | None = field(default=None, validator=optional(model_name))
    prompt_digest: Digest | None = None
    at: Instant = field(validator=INSTANT_VALIDATOR)


@final
@frozen(kw_only=True)
class RunCompleted:
    """Finalization finished; the run is over, ended by ``reason``.

    ``reason`` is None only in logs written before schema version 3, which did not record it.
    """

    reason: TerminationReason | None
    at: Instant = field(validator=INSTANT_VALIDATOR)


@final
@frozen(kw_only=True)
class SandboxChecked:
    """Whether the run's agents run in the sandbox, as decided when it started and again
    each time it resumed (the machine or ``[sandbox]`` may have changed): ``mode`` as
    asked, ``on`` the outcome and ``said`` in words (the backend and the network when on; why
    not and how to fix it when off). ``endpoints`` are the ``host:port`` pairs agents may
    reach; ``withheld`` names the environment's variables no agent gets (names only)."""

    mode: SandboxMode
    on: bool
    said: str
    endpoints: tuple[str, ...]
    withheld: tuple[str, ...]
    at: Instant = field(validator=INSTANT_VALIDATOR)


LifecycleEvent: TypeAlias = (
    RunStarted
    | RunInterrupted
    | RunResumed
    | RunCompleted
    | RunAbandoned
    | RunSalvaged
    | RunForked
    | SandboxChecked
)
"""Facts about the run as a whole."""
