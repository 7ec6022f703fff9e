"""``[sandbox]`` and ``[agents.NAME] sandbox``: where agents run and what they may see, write
and reach (pure). See ``docs/research/sandbox-design.md``, section 5.

The tables hold what the person wrote (strings); :meth:`SandboxConfig.policy` turns them into
the :class:`~pipeline.core.sandbox.SandboxPolicy` a run uses, and :func:`check_sandbox` names every
mistake first, each with its key. What depends on the machine or the workspace (a ``write``
entry inside ralph's own files, a ``read`` entry that would uncover ``$HOME``) is refused when
the sandbox is laid out, with the same kind of message.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from functools import partial
from typing import Final, final

from attrs import frozen

from pipeline.core.sandbox import (
    DEFAULT_UID,
    MAX_UID,
    Endpoint,
    NetworkMode,
    SandboxError,
    SandboxMode,
    SandboxPolicy,
    parse_endpoint,
    path_problem,
    pattern_problem,
    protect_problem,
)

__all__ = ["AgentSandboxConfig", "SandboxConfig", "check_sandbox"]

_MODES: Final = ", ".join(m.value for m in SandboxMode)
_NETWORKS: Final = ", ".join(n.value for n in NetworkMode)


@final
@frozen(kw_only=True)
class AgentSandboxConfig:
    """``[agents.NAME] sandbox``: what one agent needs beside its preset's own folders and
    variables (added to them, never replacing them)."""

    read: tuple[str, ...] = ()
    """More read-only paths (absolute or ``~/``)."""
    write: tuple[str, ...] = ()
    """More writable paths (absolute or ``~/``)."""
    pass_env: tuple[str, ...] = ()
    """More variables it gets (names or shell patterns)."""
    allow: tuple[str, ...] = ()
    """More endpoints it may reach (``host:port``)."""


@final
@frozen(kw_only=True)
class SandboxConfig:
    """``[sandbox]``: the sandbox every agent of the workspace runs in."""

    mode: str = SandboxMode.AUTO.value
    """``auto`` (the default: on where the machine supports it), ``required`` (refuse to
    start without it) or ``off``."""
    network: str = NetworkMode.ALLOW.value
    """``allow``: the agents' model endpoints and ``allow``; ``none``: nothing at all."""
    allow: tuple[str, ...] = ()
    """More endpoints every agent may reach (``host:port`` or ``[v6]:port``)."""
    read: tuple[str, ...] = ()
    write: tuple[str, ...] = ()
    hide: tuple[str, ...] = ()
    """More hidden paths, beside the built-in deny list (``~/.ssh``, ``~/.aws``, ...)."""
    protect: tuple[str, ...] = ()
    """More workspace paths agents may read but not write (relative to the workspace)."""
    pass_env: tuple[str, ...] = ()
    uid: int = DEFAULT_UID
    """The uid inside when ralph runs as root."""

    def policy(self) -> SandboxPolicy:
        """The policy these settings ask for (of a configuration :func:`check_sandbox` found
        no problem in)."""
        return SandboxPolicy(
            mode=SandboxMode(self.mode),
            network=NetworkMode(self.network),
            allow=_endpoints("sandbox.allow", self.allow),
            read=self.read,
            write=self.write,
            hide=self.hide,
            protect=self.protect,
            pass_env=self.pass_env,
            uid=self.uid,
        )


def _endpoints(key: str, entries: tuple[str, ...]) -> tuple[Endpoint, ...]:
    found: list[Endpoint] = []
    for entry in entries:
        try:
            found.append(parse_endpoint(entry))
        except SandboxError as error:
            raise SandboxError(f"{key}: {error}") from None
    return tuple(dict.fromkeys(found))


def _choice_problems(sandbox: SandboxConfig) -> list[str]:
    problems = []
    if sandbox.mode not in {m.value for m in SandboxMode}:
        problems.append(f"sandbox.mode: {sandbox.mode!r} is not one of {_MODES}")
    if sandbox.network not in {n.value for n in NetworkMode}:
        problems.append(f"sandbox.network: {sandbox.network!r} is not one of {_NETWORKS}")
    return problems


def _entry_problems(
    key: str, entries: tuple[str, ...], problem: Callable[[str], str | None]
) -> list[str]:
    found = ((entry, problem(entry)) for entry in entries)
    return [f"{key}: {entry!r} {why}" for entry, why in found if why is not None]


def _common_problems(
    key: str, table: SandboxConfig | AgentSandboxConfig, hide: tuple[str, ...] = ()
) -> list[str]:
    """The problems of the keys ``[sandbox]`` and an agent's table share (``key`` is the
    table's name)."""
    problems: list[str] = []
    try:
        _endpoints(f"{key}.allow", table.allow)
    except SandboxError as error:
        problems.append(str(error))
    exposing = partial(path_problem, exposing=True)
    problems += _entry_problems(f"{key}.read", table.read, exposing)
    problems += _entry_problems(f"{key}.write", table.write, exposing)
    problems += _entry_problems(f"{key}.hide", hide, path_problem)
    problems += _entry_problems(f"{key}.pass_env", table.pass_env, pattern_problem)
    return problems


def check_sandbox(sandbox: SandboxConfig, agents: Mapping[str, AgentSandboxConfig]) -> list[str]:
    """Every problem with ``[sandbox]`` and the agents' ``sandbox`` tables, one line each,
    naming the key."""
    problems = _choice_problems(sandbox)
    problems += _common_problems("sandbox", sandbox, sandbox.hide)
    problems += _entry_problems("sandbox.protect", sandbox.protect, protect_problem)
    if type(sandbox.uid) is not int or not 1 <= sandbox.uid <= MAX_UID:
        problems.append(f"sandbox.uid: must be from 1 to {MAX_UID}, got {sandbox.uid!r}")
    none = sandbox.network == NetworkMode.NONE.value
    if none and sandbox.allow:
        problems.append('sandbox.allow: needs network = "allow" (the network is "none")')
    for name, agent in agents.items():
        problems += _common_problems(f"agents.{name}.sandbox", agent)
        if none and agent.allow:
            problems.append(
                f'agents.{name}.sandbox.allow: needs [sandbox] network = "allow" '
                '(the network is "none")'
            )
    return problems
