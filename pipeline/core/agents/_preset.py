"""What ralph knows of one agent CLI, declared as one object (pure data and pure functions).

An :class:`AgentPreset` is everything the code that serves every CLI needs of one: how it is
started (``argv``, the prompt's way in, the model flag), what the sandbox binds for it (its
folders under ``$HOME`` and its variables), where its model requests go (declared, never
read from the CLI's own files), how its output reports usage and limits, how it takes
ralph's MCP server, the words of its failures that name a fix, and the pitfalls the doctor
(and a run's start) checks. Each built-in CLI is one module beside this one;
``docs/architecture/agents.md`` says how to add one.
"""

from __future__ import annotations

import enum
import types
from collections.abc import Callable, Iterable, Mapping
from datetime import datetime, tzinfo
from typing import TypeAlias, final

import attrs
from attrs import frozen

from pipeline.core.agents._limits import LimitSignal, WindowSignal
from pipeline.core.agents._mcp import McpWiring
from pipeline.core.agents._providers import Provider
from pipeline.core.agents._usage import UsageFigures
from pipeline.core.sandbox import Endpoint, SandboxError, SandboxPreset, parse_endpoint

__all__ = [
    "AgentPreset",
    "FailureHint",
    "LimitParser",
    "ModelEndpoints",
    "OutputFormat",
    "Pitfall",
    "PromptVia",
    "Situation",
    "UsageParser",
    "WindowParser",
]

UsageParser: TypeAlias = Callable[[Iterable[bytes]], UsageFigures]
"""Reads what an invocation used from its log, line by line (stdout and stderr merged, each line
as written, newline included or not)."""
LimitParser: TypeAlias = Callable[[Iterable[bytes], datetime, tzinfo], LimitSignal | None]
"""Reads the provider limit an invocation ended on (the time now and the machine's zone
place a reset told as a time of day)."""
WindowParser: TypeAlias = Callable[[Iterable[bytes]], WindowSignal | None]
"""Reads how full the provider's fullest usage window is."""


@enum.unique
class PromptVia(enum.StrEnum):
    """How an agent receives its prompt."""

    STDIN = "stdin"
    ARGUMENT = "argument"
    FILE = "file"


@final
@frozen(kw_only=True)
class OutputFormat:
    """How a CLI's output reports usage and limits (``output_format`` in ``[agents.NAME]``
    names one, so a command agent printing the same lines can use it)."""

    name: str
    usage: UsageParser
    limit: LimitParser | None = None
    """None: the output has no structured errors, so a limit is told only by its last words."""
    window: WindowParser | None = None
    """None: the output never says how full the provider's window is."""
    report: Callable[[UsageFigures], str] | None = None
    """The lines the CLI ends an invocation with when it used these figures (``usage`` reads
    them back), for a program standing in for it (``ralph demo``'s agent); None: undeclared."""


@final
@frozen(kw_only=True)
class ModelEndpoints:
    """Where a CLI sends its model requests, declared: the network gate lets the agent reach
    these, plus ``[sandbox] allow``. Nothing here reads the CLI's own configuration files: a
    provider set there is named in ``allow`` by the person.

    ``variables`` (the agent's ``env`` first, then the environment) move the CLI; failing
    them, ``defaults``. A CLI that routes by the model's name (``provider_of``) reaches that
    provider instead (its own variables, else its host; a provider not in ``providers``
    gives nothing, so ``allow`` must name it).
    """

    defaults: tuple[Endpoint, ...] = ()
    variables: tuple[str, ...] = ()
    providers: Mapping[str, Provider] = attrs.field(factory=lambda: types.MappingProxyType({}))
    provider_of: Callable[[str], str | None] | None = None

    def resolve(
        self, model: str | None, agent_env: Mapping[str, str], environ: Mapping[str, str]
    ) -> tuple[Endpoint, ...]:
        """The endpoints for ``model`` (None: the CLI's own choice) with the agent's ``env``
        over ``environ``. Raises :class:`SandboxError` naming a variable that is set but is
        no URL (the CLI would send its requests there)."""
        if model is not None and self.provider_of is not None:
            provider = self.providers.get(self.provider_of(model) or "")
            if provider is None:
                return ()
            moved = _first_set(provider.variables, agent_env, environ)
            return (moved,) if moved is not None else (provider.host,)
        moved = _first_set(self.variables, agent_env, environ)
        return (moved,) if moved is not None else self.defaults


def _first_set(
    names: tuple[str, ...], agent_env: Mapping[str, str], environ: Mapping[str, str]
) -> Endpoint | None:
    """The endpoint of the first of ``names`` set (and not blank, which the CLIs take as
    unset), the agent's ``env`` before the environment."""
    for name in names:
        for where, values in (("the agent's env", agent_env), ("the environment", environ)):
            value = values.get(name, "").strip()
            if not value:
                continue
            try:
                return parse_endpoint(value)
            except SandboxError as error:
                raise SandboxError(f"{name} in {where} is not a model endpoint: {error}") from None
    return None


@final
@frozen(kw_only=True)
class FailureHint:
    """Words a CLI prints when it refuses how it was set up, and the fix to say instead:
    such a failure is a configuration error, never retried. ``{}`` in ``says`` takes the
    pattern's first group that matched."""

    pattern: bytes
    says: str
    ignore_case: bool = False


@final
@frozen(kw_only=True)
class Situation:
    """What a pitfall is checked against: the agent's ``name``, its ``argv``, the
    environment it gets (its ``env`` on top), whether ralph runs as root, the workspace
    (``root``) and ``read``, which gives a file's bytes (None: absent or unreadable)."""

    name: str
    argv: tuple[str, ...]
    environ: Mapping[str, str]
    is_root: bool
    root: str
    read: Callable[[str], bytes | None]


@final
@frozen(kw_only=True)
class Pitfall:
    """A known way the CLI fails, or loses something, checked by ``ralph doctor`` (and, when
    ``blocks_run``, before a run starts, which then ends at once with the fix).

    ``found`` returns (what goes wrong, the fix), or None. ``fails``: every invocation
    would fail (the doctor says FAIL); otherwise something is lost and it warns."""

    found: Callable[[Situation], tuple[str, str] | None]
    fails: bool = True
    blocks_run: bool = False


@final
@frozen(kw_only=True)
class AgentPreset:
    """One agent CLI ralph runs by name (``preset = "NAME"`` in ``[agents.X]``)."""

    name: str
    argv: tuple[str, ...]
    """The program and its arguments; ``{prompt_file}`` is the rendered prompt's path."""
    prompt_via: PromptVia
    model_flag: str = "--model"
    """The flag that precedes a model name."""
    output: OutputFormat | None
    """How its output reports usage and limits (None: it does not)."""
    sandbox: SandboxPreset
    """Its folders and files under ``$HOME`` and the variables the sandbox passes it."""
    endpoints: ModelEndpoints
    install: str
    """How the person installs it (``ralph doctor`` and ``ralph init`` say it)."""
    hints: tuple[FailureHint, ...] = ()
    pitfalls: tuple[Pitfall, ...] = ()
    workspace_code: tuple[str, ...] = ()
    """Workspace paths holding code the person's own CLI runs later: read-only in the
    sandbox for every agent."""
    droppings: tuple[str, ...] = ()
    """Globs of files the CLI leaves in the work tree about itself: never committed."""
    mcp: McpWiring | None = None
    """How it takes ralph's MCP server (None: it has no MCP client)."""

    @property
    def program(self) -> str:
        """The program it runs (``argv[0]``)."""
        return self.argv[0]

    @property
    def output_format(self) -> str | None:
        """The name of its output format (None: none)."""
        return None if self.output is None else self.output.name
