"""Parsing ``ralph.toml`` text into :class:`RalphConfig`, with errors that name the key (pure).

Strict: an unknown key, a value of the wrong type (``"3"`` is not a number, ``1`` is not a
boolean) or a chain naming an agent that is not configured is an error naming the key and the
file. Nothing is ever silently ignored or coerced.
"""

from __future__ import annotations

import difflib
import enum
import functools
import tomllib
from collections.abc import Callable, Mapping
from typing import Any, Final, get_origin
from urllib.parse import parse_qs, urlsplit

import attrs
from cattrs import transform_error
from cattrs.errors import BaseValidationError, ForbiddenExtraKeysError
from cattrs.gen import make_dict_structure_fn, make_mapping_structure_fn
from cattrs.preconf.orjson import make_converter

from pipeline import PipelineError
from pipeline.core._store_schemes import POSTGRES_SCHEMES, SQLITE_SCHEME
from pipeline.core.agents import OUTPUT_FORMATS, PRESETS
from pipeline.core.config._bounds import check_ranges, find_nul
from pipeline.core.config._gates import check_gates, check_screen
from pipeline.core.config._hooks import check_hooks
from pipeline.core.config._limits import check_limits
from pipeline.core.config._loop import HatConfig, HatsConfig, check_hats, check_loop
from pipeline.core.config._model import RalphConfig
from pipeline.core.config._refs import ref_problem
from pipeline.core.config._sandbox import check_sandbox
from pipeline.core.config._topology_checks import Severity, topology_problems
from pipeline.core.serialization import configure_primitives
from pipeline.events import HUMAN_INTERACT_TOPIC, Role

__all__ = ["ConfigError", "parse_config", "require_chains"]


class ConfigError(PipelineError, ValueError):
    """The configuration is invalid; the message names the file and every offending key."""


_TOML_TYPES = {dict: "a table", list: "an array", str: "a string", int: "an integer"}


def _has_password(url: str) -> bool:
    """Whether the PostgreSQL ``url`` names a password (``USER:PASSWORD@``, or libpq's
    ``?password=`` and ``?sslpassword=``); one too odd to split counts as naming one."""
    try:
        parts = urlsplit(url)
        given = parts.password is not None
    except ValueError:
        return True
    keys = {key.lower() for key in parse_qs(parts.query, keep_blank_values=True)}
    return given or bool(keys & {"password", "sslpassword"})


def _kind(value: Any) -> str:
    return _TOML_TYPES.get(type(value), type(value).__name__)


def _converter() -> Any:
    converter = make_converter(forbid_extra_keys=True)
    configure_primitives(converter)

    def tables(make: Callable[[Any], Any]) -> Callable[[Any], Any]:
        """Records and maps come from tables only (``env = "x"`` is no table, not a missing
        method), a record's with no unknown key."""

        def factory(type_: Any) -> Any:
            inner = make(type_)

            def structure(value: Any, type_: Any) -> Any:
                if not isinstance(value, dict):
                    raise TypeError(f"expected a table, got {_kind(value)}")
                return inner(value, type_)

            return structure

        return factory

    def record(cls: type) -> Any:
        return make_dict_structure_fn(cls, converter, _cattrs_forbid_extra_keys=True)

    def mapping(type_: Any) -> Any:
        return make_mapping_structure_fn(type_, converter)

    def is_dict(type_: Any) -> bool:
        return get_origin(type_) is dict

    converter.register_structure_hook_factory(attrs.has, tables(record))
    converter.register_structure_hook_factory(is_dict, tables(mapping))

    def strings(value: Any, _type: Any) -> tuple[str, ...]:
        """Arrays of strings only: a lone string is not turned into its letters."""
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise TypeError(f"expected an array of strings, got {_kind(value)}")
        return tuple(value)

    def choice(value: Any, type_: type[enum.Enum]) -> enum.Enum:
        """A choice (``on_failure = "warn"``) by its value only; a wrong one names them all."""
        members = {member.value: member for member in type_}
        if type(value) is not str or value not in members:
            raise ValueError(f"{value!r} is not one of {', '.join(members)}")
        return members[value]

    # Both: the strict hooks' own StrEnum hook would otherwise win for a StrEnum.
    converter.register_structure_hook(enum.Enum, choice)
    converter.register_structure_hook(enum.StrEnum, choice)
    converter.register_structure_hook_func(lambda t: t == tuple[str, ...], strings)
    role_hats, work_hats = record(HatsConfig), mapping(dict[str, HatConfig])

    def hats(value: Any, type_: Any) -> HatsConfig:
        """``[hats]``: a table named after a role is the role's hat, unless it has triggers;
        a table with triggers is a hat of the user's topology, whatever its name."""
        if not isinstance(value, dict):
            raise TypeError(f"expected a table of hats, got {_kind(value)}")
        work = {k: v for k, v in value.items() if isinstance(v, dict) and "triggers" in v}
        roles = {k: v for k, v in value.items() if k not in work}
        unknown = sorted(set(roles) - _ROLE_NAMES)
        if unknown:
            raise ForbiddenExtraKeysError("", HatsConfig, set(unknown))
        configured: HatsConfig = role_hats(roles, type_)
        return attrs.evolve(configured, work=work_hats(work, dict[str, HatConfig]))

    converter.register_structure_hook(HatsConfig, hats)
    return converter


_ROLE_NAMES = frozenset(role.value for role in Role)


_config_converter = functools.cache(_converter)
"""The configuration's converter, built when a configuration is first read (building it
generates the code of every configuration record: a command that reads none pays nothing)."""


_UNKNOWN = "unknown key:"
_APART = "\x00"
"""Between the unknown keys of one table in a formatted error (a NUL never reaches the parser:
:func:`find_nul` refuses it first), so a key holding a comma stays one key."""
_ORCHESTRATOR: Final[Mapping[str, str]] = {
    "max_iterations": "[budgets] max_iterations",
    "max_runtime": "[budgets] max_runtime_s",
    "max_runtime_seconds": "[budgets] max_runtime_s",
    "max_cost": "[budgets] max_cost_usd",
    "max_cost_usd": "[budgets] max_cost_usd",
    "completion_promise": "[loop] completion_promise",
    "starting_event": "[loop] starting_event",
    **dict.fromkeys(
        ("cli", "event_loop", "core", "agent", "events", "adapters", "agent_priority"), ""
    ),
    **dict.fromkeys(("memories", "tasks", "hooks", "RObot", "features", "skills", "tui"), ""),
}
"""Top-level settings of a ralph-orchestrator ``ralph.yml`` a person may carry over into
``ralph.toml`` by hand, and the key that holds the same setting there ("" when none does:
``ralph init --from`` says what becomes of it)."""


_ORCHESTRATOR_HAT: Final[Mapping[str, str]] = {
    "backend": 'chain = ["AGENT"], AGENT one of [agents]',
    "backend_args": "args",
    "extra_instructions": "instructions",
    "subscribes_to": "triggers",
}
"""A ralph-orchestrator hat's settings that a ``[hats.ID]`` table says another way."""


def _unknown_hint(name: str, table: type | None) -> str:
    """What to say after ``unknown key`` for ``name`` in ``table`` (None: the file's top
    level): where a ralph-orchestrator setting goes, or the known key it is closest to."""
    if table is None or table is RalphConfig:
        if name in _ORCHESTRATOR:
            where = _ORCHESTRATOR[name]
            instead = f"here it is {where}; " if where else ""
            return (
                f" (a ralph-orchestrator setting: {instead}ralph init --from ralph.yml "
                "translates a whole ralph.yml)"
            )
        table = RalphConfig
    if table is HatConfig and name in _ORCHESTRATOR_HAT:
        return f" (a ralph-orchestrator hat setting: here it is {_ORCHESTRATOR_HAT[name]})"
    if table is HatsConfig or not attrs.has(table):
        return ""  # hats: the caller names the roles
    close = difflib.get_close_matches(name, [f.alias for f in attrs.fields(table)], n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""


def _format(error: BaseException, type_: Any) -> str:
    if isinstance(error, ForbiddenExtraKeysError):
        table = error.cl if isinstance(error.cl, type) else None
        return _UNKNOWN + _APART.join(
            f"{name}: unknown key{_unknown_hint(name, table)}"
            for name in sorted(error.extra_fields)
        )
    if isinstance(error, KeyError):
        return "is required"
    if str(error):
        return str(error)
    return type(error).__name__


def _key(path: str) -> str:
    """``$.agents['main'].model`` as a TOML key: ``agents.main.model``."""
    key = path.removeprefix("$").lstrip(".")
    return key.replace("['", ".").replace("']", "").replace("[", ".").replace("]", "")


def _hint(key: str, message: str) -> str:
    """More to say about a value of the wrong type, where a common mistake explains it."""
    if key.startswith("gates.") and key.endswith(".argv") and message.endswith("a string"):
        return (
            ' (a gate\'s argv is never a shell string: ["sh", "-c", "..."] runs a shell on purpose)'
        )
    return ""


def parse_config(text: str, source: str) -> RalphConfig:
    """The configuration in ``text`` (read from ``source``, named in errors)."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        raise ConfigError(f"{source}: not valid TOML: {error}") from error
    nul = list(find_nul(data))
    if nul:
        raise ConfigError(f"{source}: " + "; ".join(nul))
    try:
        config: RalphConfig = _config_converter().structure(data, RalphConfig)
    except BaseValidationError as error:
        problems = []
        for line in transform_error(error, path="$", format_exception=_format):
            message, _, path = line.rpartition(" @ ")
            key = _key(path)
            if message.startswith(_UNKNOWN):
                # A hat is named by its role, or has triggers; say which names there are.
                hint = (
                    f" (a hat per role: {', '.join(r.value for r in Role)}; a hat of your "
                    "own topology has triggers)"
                    if key == "hats"
                    else ""
                )
                for said in message.removeprefix(_UNKNOWN).split(_APART):
                    problems.append(f"{key + '.' if key else ''}{said}{hint}")
            else:
                problems.append(f"{key}: {message}{_hint(key, message)}")
        raise ConfigError(f"{source}: " + "; ".join(problems)) from error
    _check(config, source)
    return config


def _check(config: RalphConfig, source: str) -> None:
    """Rules that span keys: agents are well formed and every chain names known agents."""
    problems = []
    for name, agent in config.agents.items():
        if (agent.preset is None) == (agent.command is None):
            problems.append(f"agents.{name}: give exactly one of preset or command")
        if agent.preset is not None and agent.preset not in PRESETS:
            known = ", ".join(sorted(PRESETS))
            problems.append(f"agents.{name}.preset: unknown preset {agent.preset!r} ({known})")
        if agent.output_format is not None and agent.output_format not in OUTPUT_FORMATS:
            known = ", ".join(OUTPUT_FORMATS)
            problems.append(
                f"agents.{name}.output_format: unknown format {agent.output_format!r} ({known})"
            )
        if agent.command is not None and not (agent.command and agent.command[0].strip()):
            problems.append(f"agents.{name}.command: must name a program")
    for role in Role:
        hat_chain = config.hats.for_role(role).chain
        key = f"hats.{role.value}.chain" if hat_chain else f"chains.{role.value}"
        if hat_chain and getattr(config.chains, role.value):
            problems.append(
                f"{key}: the {role.value} chain is also given as chains.{role.value}; give it once"
            )
        problems.extend(_chain_problems(key, config.chain_for(role), config))
    for name, hat in config.hats.work.items():
        problems.extend(_chain_problems(f"hats.{name}.chain", hat.chain, config))
    problems.extend(_chain_problems("merge.resolvers", config.merge.resolvers, config))
    for key, ref in (("rebase_onto", config.rebase_onto), ("branch", config.branch)):
        problem = None if ref is None else ref_problem(ref)
        if problem is not None:
            problems.append(f"{key}: {problem}")
    url = config.store.url
    if url is not None and (
        not url.strip() or ("://" in url and not url.startswith((*POSTGRES_SCHEMES, SQLITE_SCHEME)))
    ):
        problems.append(
            f"store.url: {url!r} is not a store (use a path, sqlite:///PATH or "
            "postgresql://USER@HOST:PORT/DATABASE)"
        )
    elif url is not None and url.startswith(POSTGRES_SCHEMES) and _has_password(url):
        # Every agent reads ralph.toml (read-only in the sandbox) and git keeps it.
        problems.append(
            "store.url: holds a password, which every agent can read in ralph.toml: leave it "
            "out (PGPASSWORD or ~/.pgpass give it), or give the whole URL in RALPH_STORE or "
            "--store"
        )
    if config.validate and not config.validate[0].strip():
        problems.append("validate: must name a program (or leave validate out)")
    problems.extend(check_hats(config.hats))
    loop = config.loop
    acted_on = (loop.completion_promise, loop.cancellation_promise, HUMAN_INTERACT_TOPIC)
    promises = tuple(t for t in acted_on if t) if config.hats.topology else None
    problems.extend(check_gates(config.gates, loop.commits, promises))
    problems.extend(check_screen(config.tamper, config.postconditions, config.loop.commits))
    agent_sandboxes = {name: agent.sandbox for name, agent in config.agents.items()}
    problems.extend(check_sandbox(config.sandbox, agent_sandboxes))
    problems.extend(check_loop(config.loop, config.hats))
    problems.extend(check_limits(config.limits))
    problems.extend(check_hooks(config.hooks, config.notify))
    ranges = check_ranges(config)
    problems.extend(ranges)

    for model, price in config.prices.items():
        figures = (
            price.input_usd_per_mtok,
            price.output_usd_per_mtok,
            price.cache_read_usd_per_mtok or 0.0,
            price.cache_write_usd_per_mtok or 0.0,
        )
        if not all(0 <= figure < 1e9 for figure in figures):
            problems.append(f"prices.{model}: prices must be from 0 (US dollars per 1M tokens)")
    for key in ("max_event_lines", "max_event_bytes", "max_event_line_bytes"):
        value = getattr(config.budgets, key)
        if not 1 <= value <= 1 << 40:
            problems.append(f"budgets.{key}: must be from 1 to 2**40, got {value}")
    try:
        if not ranges:  # each out-of-range value is named once, above
            config.budgets.to_budget()
    except ValueError as error:
        problems.append(f"budgets: {error}")
    if not problems and config.hats.topology:
        problems.extend(_topology_errors(config))
    if problems:
        raise ConfigError(f"{source}: " + "; ".join(problems))


def _chain_problems(key: str, chain: tuple[str, ...], config: RalphConfig) -> list[str]:
    """What is wrong with the agents a chain at ``key`` names: one not configured, or one
    named twice."""
    problems = [
        f"{key}: names agent {name!r}, which is not configured under [agents.{name}]"
        for name in chain
        if name not in config.agents
    ]
    if len(set(chain)) != len(chain):
        problems.append(f"{key}: names an agent twice")
    return problems


def _topology_errors(config: RalphConfig) -> list[str]:
    """What makes a topology unable to work as written (its warnings are shown by ``ralph
    run`` and ``ralph doctor``)."""
    return [
        f"the topology: {problem.message}"
        for problem in topology_problems(config.loop_policy())
        if problem.severity is Severity.ERROR
    ]


def require_chains(config: RalphConfig, source: str) -> None:
    """Raise :class:`ConfigError` unless every role has an agent to run (needed to start a run)."""
    missing = [role.value for role in _needed_roles(config) if not config.chain_for(role)]
    if missing:
        raise ConfigError(
            f"{source}: chains.{missing[0]}: no agent for the "
            f"{', '.join(missing)} role{'s' if len(missing) > 1 else ''} "
            '(set [chains] default = ["AGENT"], or a chain per role, to agents of [agents]: '
            "`ralph init` writes them for the agent CLIs it finds on PATH, and "
            "docs/your-own-agent.md shows a program of your own)"
        )


def _needed_roles(config: RalphConfig) -> tuple[Role, ...]:
    """The roles a run of ``config`` may need an agent for: all of them in the built-in
    pipeline; in a topology the developer (unless every hat has its own chain), the
    committer when it commits, and the fixer (dev-fix)."""
    if not config.hats.topology:
        return tuple(Role)
    needed = [Role.FIXER]
    if not all(hat.chain for hat in config.hats.work.values()):
        needed.insert(0, Role.DEVELOPER)
    if config.loop.commits:
        needed.insert(-1, Role.COMMITTER)
    return tuple(needed)
