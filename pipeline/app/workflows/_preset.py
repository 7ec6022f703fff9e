"""A workflow preset read from its TOML text, and checked (pure).

A preset file is a ``ralph.toml`` fragment: a ``[preset]`` table describing it
(``description``, one line, and optionally ``max_iterations``, the activations a typical run
of the workflow needs, which ``ralph init --preset`` writes as ``[budgets] max_iterations``),
then the ``[loop]`` and ``[hats.NAME]`` tables of its workflow. Nothing else may be in it: a
preset is a workflow, never agents, chains, budgets or a store, which stay the workspace's.
Without the ``[preset]`` table the fragment is a ``ralph.toml`` that :func:`parse_config`
reads (checked here, so a preset that would not parse is refused when it is read).
"""

from __future__ import annotations

import copy
import re
import tomllib
from collections.abc import Mapping
from typing import Any, Final, final

from attrs import frozen

from pipeline import PipelineError
from pipeline.core.config import ConfigError, RalphConfig, dump_toml, parse_config
from pipeline.events import LoopPolicy

__all__ = ["NAME_PATTERN", "Preset", "PresetError", "parse_preset"]

NAME_PATTERN: Final = re.compile(r"[a-z0-9][a-z0-9-]*")
"""What a preset's name looks like (it is a file name and a command-line word)."""

_TABLES: Final = frozenset({"preset", "loop", "hats"})
_ABOUT: Final = frozenset({"description", "max_iterations"})


class PresetError(PipelineError, ValueError):
    """A preset cannot be found, read or applied; the message names it."""


@final
@frozen(kw_only=True)
class Preset:
    """One workflow preset: its name, what it is for, and its ``[loop]`` and ``[hats]``."""

    name: str
    description: str
    """One line, for listings."""
    text: str
    """The file as shipped, comments included."""
    loop: Mapping[str, Any]
    """The ``[loop]`` keys it sets (read-only: :meth:`workflow` gives copies)."""
    hats: Mapping[str, Any]
    """Its ``[hats.NAME]`` tables, by name, in file order (read-only, as ``loop``)."""
    max_iterations: int | None = None
    """The activations a typical run needs (None: the starter's default)."""

    @property
    def topology(self) -> bool:
        """Whether the preset is a topology of hats (else it is the built-in pipeline)."""
        return any(isinstance(hat, dict) and "triggers" in hat for hat in self.hats.values())

    def workflow(self) -> dict[str, Any]:
        """Its ``[loop]`` and ``[hats]`` as a fresh TOML document (the empty ones left out)."""
        document: dict[str, Any] = {}
        if self.loop:
            document["loop"] = copy.deepcopy(dict(self.loop))
        if self.hats:
            document["hats"] = copy.deepcopy(dict(self.hats))
        return document

    def config(self) -> RalphConfig:
        """The preset's workflow read as a ``ralph.toml`` of its own (no agents)."""
        return parse_config(dump_toml(self.workflow()), f"preset {self.name}")

    def policy(self) -> LoopPolicy:
        """The loop policy a run of the preset records (what the checks and drawings read)."""
        return self.config().loop_policy()


def _about(table: object, source: str) -> tuple[str, int | None]:
    """The description and max_iterations of a ``[preset]`` table."""
    if not isinstance(table, dict):
        raise PresetError(f"{source}: [preset] must be a table with a description")
    unknown = sorted(set(table) - _ABOUT)
    if unknown:
        raise PresetError(
            f"{source}: preset.{unknown[0]}: unknown key ({', '.join(sorted(_ABOUT))})"
        )
    description = table.get("description")
    if not isinstance(description, str) or not description.strip() or "\n" in description:
        raise PresetError(f"{source}: preset.description: give one line saying what it is for")
    iterations = table.get("max_iterations")
    if iterations is not None and (
        isinstance(iterations, bool) or not isinstance(iterations, int) or iterations < 1
    ):
        raise PresetError(f"{source}: preset.max_iterations: a whole number from 1")
    return description.strip(), iterations


def parse_preset(name: str, text: str, source: str) -> Preset:
    """The preset called ``name`` whose file text is ``text`` (read from ``source``, named in
    errors). Raises :class:`PresetError` when it is not a preset whose workflow parses."""
    if not NAME_PATTERN.fullmatch(name):
        raise PresetError(f"{source}: {name!r} is no preset name (a-z, 0-9 and -)")
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        raise PresetError(f"{source}: not valid TOML: {error}") from error
    unknown = sorted(set(data) - _TABLES)
    if unknown:
        raise PresetError(
            f"{source}: {unknown[0]}: a preset holds [preset], [loop] and [hats] only "
            "(agents, chains and budgets stay the workspace's)"
        )
    description, iterations = _about(data.get("preset"), source)
    loop, hats = data.get("loop", {}), data.get("hats", {})
    if not isinstance(loop, dict) or not isinstance(hats, dict):
        raise PresetError(f"{source}: [loop] and [hats] must be tables")
    preset = Preset(
        name=name,
        description=description,
        text=text,
        loop=loop,
        hats=hats,
        max_iterations=iterations,
    )
    try:
        # Without agents, a hat naming a chain is refused too: a preset cannot know them.
        preset.config()
    except ConfigError as error:
        raise PresetError(f"{source}: {error}") from error
    return preset
