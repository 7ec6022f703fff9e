"""ralph-orchestrator backends translated into ``[agents.NAME]`` tables (pure).

A backend ralph has a preset for (``pipeline.core.agents.PRESETS``) becomes
``preset = NAME``; a custom program becomes its argv list, the prompt given as its last
argument as ralph-orchestrator gives it. Any other backend (kiro, amp, copilot, ...) is listed
as not translated, and no chain names it: a chain naming an unconfigured agent is an error.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Final, final

from attrs import Factory, define

from pipeline.core.agents import PRESETS
from pipeline.core.config._orchestrator_reading import Reader

__all__ = ["DEFAULT_BACKEND", "Agents", "default_chain", "hat_backend"]

DEFAULT_BACKEND: Final = "claude"
"""The backend ralph-orchestrator runs when ``cli.backend`` is left out."""

_KNOWN_PRESETS: Final = ", ".join(sorted(PRESETS))
_NOT_A_NAME = re.compile(r"[^A-Za-z0-9_-]+")
_CLI_KEYS: Final = ("backend", "command", "args", "prompt_mode", "prompt_flag")
_INTERACTIVE: Final = dict.fromkeys(
    ("default_mode", "idle_timeout_secs"), "interactive mode only; ralph runs agents headless"
)


@final
@define(kw_only=True)
class Agents:
    """The ``[agents.NAME]`` tables of a translation, in the order they are first needed."""

    tables: dict[str, dict[str, object]] = Factory(dict)

    def add(self, name: str, table: dict[str, object], owner: str) -> str:
        """The name ``table`` is configured under: ``name``, or ``name-owner`` (then numbered)
        when a different table already has that name."""
        candidate, number = name, 1
        while self.tables.get(candidate, table) != table:
            number += 1
            candidate = f"{name}-{owner}" if number == 2 else f"{name}-{owner}-{number - 1}"
        self.tables[candidate] = table
        return candidate


def _unknown(name: str, where: str) -> str:
    if name == "auto":
        return (
            "auto-detection has no equivalent; configure the agents to try under "
            f"[agents.NAME] and list them in {where}"
        )
    return (
        f"{name!r} is not one of ralph's agent presets ({_KNOWN_PRESETS}); "
        f"configure [agents.{name}] with a command and name it in {where}"
    )


def _program_problem(command: str) -> str | None:
    if not command.strip():
        return "names no program"
    if any(c.isspace() for c in command):
        return (
            f"{command!r} holds spaces; ralph runs an argv list, never a shell string: "
            "configure [agents.NAME] command with the program and each argument apart"
        )
    return None


def _command_name(command: str) -> str:
    """The agent name of a custom program: its file name, as ralph-orchestrator names it."""
    return _NOT_A_NAME.sub("-", command.rstrip("/").rsplit("/", 1)[-1]).strip("-") or "command"


def default_chain(
    reader: Reader, cli: Mapping[str, object], agent: str | None, agents: Agents
) -> tuple[str, ...]:
    """The ``[chains] default`` of ``cli`` (the top-level v1 ``agent`` wins over
    ``cli.backend``, as in ralph-orchestrator); empty when its backend is not translated."""
    backend = reader.text(cli, "backend", "cli")
    command = reader.text(cli, "command", "cli")
    args = reader.texts(cli, "args", "cli") or ()
    prompt_mode = reader.text(cli, "prompt_mode", "cli")
    prompt_flag = reader.text(cli, "prompt_flag", "cli")
    reader.rest(cli, "cli", _CLI_KEYS, _INTERACTIVE)
    if agent is not None and backend is not None and backend != agent:
        reader.skip("cli.backend", f"overridden by the top-level agent {agent!r}")
    name, path = (
        (agent, "agent") if agent is not None else (backend or DEFAULT_BACKEND, "cli.backend")
    )
    if name == "custom":
        if command is None:
            reader.skip(path, "custom needs cli.command; the default chain is left empty")
            return ()
        problem = _program_problem(command)
        if problem is not None:
            reader.skip("cli.command", f"{problem}; the default chain is left empty")
            return ()
        stdin = prompt_mode == "stdin"
        flag = (prompt_flag,) if prompt_flag and not stdin else ()
        table: dict[str, object] = {
            "command": [command, *args, *flag],
            "prompt_via": "stdin" if stdin else "argument",
        }
        return (agents.add("custom", table, "cli"),)
    for key, value in (("prompt_mode", prompt_mode), ("prompt_flag", prompt_flag)):
        if value is not None:
            reader.skip(f"cli.{key}", "used by ralph-orchestrator's custom backend only")
    if name not in PRESETS:
        reader.skip(path, _unknown(name, "[chains] default"))
        if args:
            reader.skip("cli.args", f"arguments of {name!r}, which is not translated")
        if command is not None:
            reader.skip("cli.command", f"the program of {name!r}, which is not translated")
        return ()
    if command is not None:
        reader.skip(
            "cli.command",
            f"ralph's {name} preset runs {PRESETS[name].argv[0]!r} from PATH "
            f"(for another program, configure [agents.{name}] with a command)",
        )
    table = {"preset": name, "args": list(args)} if args else {"preset": name}
    return (agents.add(name, table, "cli"),)


def hat_backend(
    reader: Reader, value: object, path: str, hat: str, agents: Agents
) -> tuple[str | None, tuple[str, ...]]:
    """The agent the backend at ``path`` of hat ``hat`` is configured as (None: left out or
    not translated), and the arguments its mapping adds to the hat's."""
    where = f"[hats.{hat}] chain; until then the hat runs the default chain"
    if value is None:
        return None, ()
    if isinstance(value, str):
        if value not in PRESETS:
            reader.skip(path, _unknown(value, where))
            return None, ()
        return agents.add(value, {"preset": value}, hat), ()
    table = reader.table(value, path)
    reader.rest(table, path, ("type", "agent", "args", "command"), {})
    args = reader.texts(table, "args", path) or ()
    if "type" in table:
        backend = reader.text(table, "type", path)
        agent = reader.text(table, "agent", path)
        if backend is None:
            reader.fail(f"{path}.type", "expected a backend name, got null")
        preset = next((n for n in (backend, agent) if n is not None and n in PRESETS), None)
        if preset is None:
            reader.skip(path, _unknown(backend, where))
            return None, ()
        if preset != backend:
            reader.skip(
                f"{path}.type",
                f"{backend!r} is not translated; the hat runs its agent {preset!r} "
                f"with ralph's {preset} preset",
            )
        elif agent is not None:
            reader.skip(f"{path}.agent", f"a {backend} agent name has no equivalent")
        return agents.add(preset, {"preset": preset}, hat), args
    command = reader.text(table, "command", path)
    if command is None:
        reader.fail(path, "expected a backend name, or a mapping with type or command")
    problem = _program_problem(command)
    if problem is not None:
        reader.skip(f"{path}.command", f"{problem}; until then the hat runs the default chain")
        return None, ()
    custom: dict[str, object] = {"command": [command, *args], "prompt_via": "argument"}
    return agents.add(_command_name(command), custom, hat), ()
