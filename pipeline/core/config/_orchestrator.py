"""Translating a ralph-orchestrator v2 ``ralph.yml`` into a ``ralph.toml`` (pure).

Hats become a topology (``[hats.ID]`` tables with triggers) with ralph-orchestrator's
coordinator as one hat more (``_orchestrator_coordinator``; alone when the file has no hats),
backends become ``[agents.NAME]`` tables and chains, ``event_loop`` becomes ``[budgets]`` and
``[loop]``. A ralph-orchestrator test scenario (``name``, ``config``, ``mock_responses``,
``expected``) translates as its ``config``.
Whatever has no equivalent is listed, by key path and with the reason, both in
:attr:`Translation.untranslated` and in comments at the top of the text: nothing is dropped
silently. A setting of null, false or an empty value (or a mapping of only those, such as
``{enabled: false}``) asks for nothing and is not listed.
The text is deterministic: hats in the file's order, keys in a fixed order.

PyYAML and tomli-w are imported when a translation runs, so that importing the configuration
package stays cheap for the commands that never translate.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final, final

from attrs import frozen

from pipeline.core.config._orchestrator_agents import DEFAULT_BACKEND, Agents, default_chain
from pipeline.core.config._orchestrator_coordinator import coordinator_hat, coordinator_name
from pipeline.core.config._orchestrator_hats import translate_hat
from pipeline.core.config._orchestrator_loop import ORCHESTRATOR_BUDGETS, translate_loop
from pipeline.core.config._orchestrator_reading import (
    Reader,
    key_path,
    kind,
    one_line,
    says_something,
)
from pipeline.core.config._parse import ConfigError
from pipeline.core.config._toml import dump_toml

__all__ = ["Translation", "translate_orchestrator_config"]

_IN_THE_LOG: Final = "no equivalent (ralph keeps its state in the event log)"
_UNTRANSLATED: Final[Mapping[str, str]] = {
    "agent_priority": (
        "auto-detection order has no equivalent; list the agents to fall back through "
        "in [chains] default"
    ),
    "adapters": "per-backend settings have no equivalent; set timeout_s under [agents.NAME]",
    "retry_delay": "no equivalent; ralph's retries back off by [budgets] backoff_base_ms",
    "max_tokens": "dropped by ralph-orchestrator; ralph's [budgets] max_tokens bounds a run",
    "memories": _IN_THE_LOG,
    "tasks": _IN_THE_LOG,
    "hooks": "no equivalent (ralph runs no lifecycle hooks)",
    "RObot": "no equivalent (a person answers an agent's question with ralph respond)",
    **dict.fromkeys(
        ("verbose", "archive_prompts", "enable_metrics", "_suppress_warnings", "tui", "skills"),
        "no equivalent",
    ),
    "features": "no equivalent",
}
"""Top-level settings of ralph-orchestrator with no equivalent in ralph, and why."""
_TRANSLATED: Final = frozenset(
    {"cli", "event_loop", "hats", "events", "core", "agent", "prompt_file", "completion_promise"}
    | {"max_iterations", "max_runtime", "max_cost"}
)
_CORE: Final[Mapping[str, str]] = {
    "scratchpad": _IN_THE_LOG,
    "specs_dir": "no equivalent (ralph has no specs directory)",
    "guardrails": "no equivalent; add the rules to the prompt file or to a hat's instructions",
    "workspace_root": "no equivalent (ralph works in the repository it is run in)",
}
_EVENTS: Final = (
    "topic descriptions have no equivalent; describe the topic in the instructions of the "
    "hats that trigger on it or publish it"
)
_SCENARIO: Final[Mapping[str, str]] = {
    "name": "a test scenario's name; no equivalent",
    "description": "a test scenario's description; no equivalent",
    "mock_responses": (
        "the agent outputs a test scenario replays; no equivalent in a configuration "
        "(ralph's scripted agent, pipeline.app.agents.scripted, replays outputs)"
    ),
    "expected": "what a test scenario expects of its run; no equivalent in a configuration",
}
"""The keys of a ralph-orchestrator test scenario besides its ``config``."""


@final
@frozen(kw_only=True)
class Translation:
    """A ``ralph.toml`` translated from a ralph-orchestrator ``ralph.yml``."""

    toml_text: str
    """The whole ``ralph.toml``, starting with comments naming the source and listing what
    could not be translated."""
    untranslated: tuple[str, ...]
    """One line per setting not translated: its YAML key path and why
    (``hats.builder.scratchpad: no equivalent (...)``)."""
    notes: tuple[str, ...] = ()
    """One line per setting translated in a way worth knowing: its YAML key path and how
    (``hats.builder.subscribes_to: read as its triggers (...)``)."""


def _load(yaml_text: str, source: str) -> dict[str, object]:
    import yaml  # on first use: see the module's docstring

    try:
        data = yaml.safe_load(yaml_text)
    except yaml.MarkedYAMLError as error:
        mark = error.problem_mark or error.context_mark
        where = "" if mark is None else f" (line {mark.line + 1}, column {mark.column + 1})"
        problem = error.problem or error.context or "malformed"
        raise ConfigError(one_line(f"{source}: not valid YAML{where}: {problem}")) from error
    except yaml.YAMLError as error:
        raise ConfigError(one_line(f"{source}: not valid YAML: {error}")) from error
    except RecursionError as error:
        raise ConfigError(f"{source}: not a configuration: nested too deeply") from error
    if not isinstance(data, dict):
        what = "nothing" if data is None else kind(data)
        raise ConfigError(f"{source}: expected a mapping of settings at the top level, got {what}")
    return data


def _header(source: str, untranslated: list[str], notes: list[str], read: list[str]) -> str:
    name = one_line(source)
    lines = [f"# Translated by ralph from {name}, a ralph-orchestrator configuration.", *notes]
    lines.extend(f"# {line}" for line in read)
    if untranslated:
        lines.append(f"# Not translated ({len(untranslated)}):")
        lines.extend(f"#   {line}" for line in untranslated)
    else:
        lines.append("# Everything in it was translated.")
    return "\n".join(lines) + "\n\n"


def _note_sections(reader: Reader, top: Mapping[str, object]) -> None:
    """Note ``events``, ``core`` and every top-level key not translated."""
    for topic, metadata in reader.table(top.get("events"), "events").items():
        if says_something(metadata):
            reader.skip(key_path("events", topic), _EVENTS)
    reader.rest(reader.table(top.get("core"), "core"), "core", (), _CORE)
    # An unknown top-level key is noted only when it asks for something, as a known one is.
    reader.rest(_asking(top), "", _TRANSLATED, _UNTRANSLATED)


def _asking(table: Mapping[str, object]) -> dict[str, object]:
    """The settings of ``table`` that ask for something."""
    return {key: value for key, value in table.items() if says_something(value)}


def _scenario(reader: Reader, top: dict[str, object]) -> tuple[Reader, dict[str, object]]:
    """The reader and the settings of the file's configuration: a test scenario's ``config``
    (its other keys noted as not translated), else the whole file."""
    if "mock_responses" not in top or not isinstance(top.get("config"), dict):
        return reader, top
    reader.rest(_asking(top), "", ("config",), _SCENARIO)
    inner = Reader(source=reader.source, prefix="config", untranslated=reader.untranslated)
    return inner, inner.table(top["config"], "")


def _coordinator_notes(name: str, *, alone: bool) -> list[str]:
    first = (
        f"# ralph-orchestrator's coordinator, Ralph, is the hat '{name}' ([loop] coordinator): "
        "it takes every topic no other hat triggers on, and may publish the completion promise."
    )
    if not alone:
        return [first]
    return [
        first,
        f"# With no hats it works alone, as Ralph does; for ralph's own plan, develop and review "
        f"pipeline instead, delete [hats.{name}] and [loop] starting_event and coordinator.",
    ]


def translate_orchestrator_config(yaml_text: str, source: str) -> Translation:
    """The ``ralph.toml`` equivalent of the ralph-orchestrator configuration ``yaml_text``,
    read from ``source`` (named in errors and in the text). Raises :class:`ConfigError` when
    the text is not YAML or a setting has the wrong shape or type."""
    reader, top = _scenario(Reader(source=source), _load(yaml_text, source))
    agents = Agents()
    cli = reader.table(top.get("cli"), "cli")
    agent = reader.text(top, "agent", "")
    chain = default_chain(reader, cli, agent, agents)
    event_loop = reader.table(top.get("event_loop"), "event_loop")
    # The promise first, its notes left for the loop's own turn below: a hat's default that is
    # the promise is translated with the hat.
    promise = translate_loop(reader.fresh(), event_loop, top, "").loop["completion_promise"]
    assert isinstance(promise, str)  # translate_loop always writes one
    hats: dict[str, dict[str, Any]] = {}
    given = reader.table(top.get("hats"), "hats")
    for hat_id, value in given.items():
        hat = translate_hat(reader, hat_id, value, agents, promise)
        if hat is not None:
            hats[hat_id] = hat
    if given and not hats:
        reader.skip("hats", "none translated, so the coordinator works alone")
    coordinator = coordinator_name(given)
    settings = translate_loop(reader, event_loop, top, coordinator)
    _note_sections(reader, top)
    notes = _coordinator_notes(coordinator, alone=not hats)
    hats[coordinator] = coordinator_hat(hats, promise)

    document: dict[str, object] = {"prompt_file": settings.prompt_file, "budgets": settings.budgets}
    if agents.tables:
        document["agents"] = agents.tables
    if chain:
        document["chains"] = {"default": list(chain)}
    document["hats"] = hats
    document["loop"] = settings.loop

    if settings.defaulted:
        figures = ", ".join(f"{key} = {ORCHESTRATOR_BUDGETS[key]}" for key in settings.defaulted)
        notes.append(f"# Budgets it leaves out are ralph-orchestrator's defaults: {figures}.")
    if agent is None and cli.get("backend") is None:
        notes.append(
            f"# It names no backend: ralph-orchestrator's default, {DEFAULT_BACKEND}, is used."
        )
    return Translation(
        toml_text=_header(source, reader.untranslated, notes, reader.notes) + dump_toml(document),
        untranslated=tuple(reader.untranslated),
        notes=tuple(reader.notes),
    )
