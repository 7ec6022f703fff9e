"""Reading a parsed ralph-orchestrator ``ralph.yml`` by key path, for its translation (pure).

A :class:`Reader` checks each value's type as it is read, raising :class:`ConfigError` naming
the file and the key path, and collects one line for every setting that cannot be translated.
A key set to null is read as a key left out, as ralph-orchestrator reads it. A reader of a
part of the file (a test scenario's ``config``) names every key path from the file's top.
"""

from __future__ import annotations

import math
import re
from collections.abc import Collection, Mapping
from typing import Any, NoReturn, final

from attrs import Factory, define

from pipeline.core.config._parse import ConfigError
from pipeline.events import PatternError, check_pattern

__all__ = [
    "Reader",
    "key_path",
    "kind",
    "one_line",
    "says_something",
    "topic_problem",
    "trigger_problem",
]

_PLAIN_KEY = re.compile(r"[A-Za-z0-9_.:-]+")

_KINDS = {
    dict: "a mapping",
    list: "a list",
    str: "a string",
    int: "an integer",
    float: "a number",
    bool: "true or false",
}


def kind(value: object) -> str:
    """What ``value`` is, in the words of YAML (``a mapping``, ``a list``, ``null``)."""
    if value is None:
        return "null"
    return _KINDS.get(type(value), f"a {type(value).__name__}")


def says_something(value: object) -> bool:
    """Whether a setting of ``value`` asks for anything: null, false, empty values and
    mappings of those (``{enabled: false}``) ask for nothing, so leaving out such a setting
    loses nothing even where it has no equivalent."""
    if value is None or value is False:
        return False
    if isinstance(value, dict):
        return any(says_something(item) for item in value.values())
    return not (isinstance(value, str | list) and not value)


def one_line(text: str) -> str:
    """``text`` with every character a TOML comment or a terminal line cannot hold escaped."""
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() or c == "\t" else repr(c)[1:-1] for c in text)


def key_path(prefix: str, key: str) -> str:
    """The path of ``key`` inside ``prefix`` (``hats.builder``); an odd key is quoted."""
    segment = key if _PLAIN_KEY.fullmatch(key) else repr(key)
    return f"{prefix}.{segment}" if prefix else segment


def trigger_problem(pattern: str) -> str | None:
    """Why ``pattern`` cannot be kept as a ralph topic pattern (None: it can, as it is)."""
    try:
        check_pattern(pattern)
    except PatternError as error:
        return str(error)
    if "**" in pattern.split("."):
        return (
            f"{pattern!r}: ralph-orchestrator reads '**' as a plain segment no topic has; "
            "in ralph it matches any number of segments"
        )
    return None


def topic_problem(topic: str) -> str | None:
    """Why ``topic`` cannot be kept as a ralph topic (None: it can, as it is)."""
    if "*" in topic:
        return f"{topic!r} is a pattern, not a topic"
    return trigger_problem(topic)


@final
@define(kw_only=True)
class Reader:
    """Reads ``source``'s values with their types checked, and collects what is not translated."""

    source: str
    prefix: str = ""
    """The key path of the part of the file read (empty: the whole file)."""
    untranslated: list[str] = Factory(list)
    """One line per setting not translated: its key path and why."""
    notes: list[str] = Factory(list)
    """One line per setting translated in a way worth saying: its key path and how."""

    def fresh(self) -> Reader:
        """A reader of the same part of the same file, with nothing collected yet."""
        return Reader(source=self.source, prefix=self.prefix)

    def _full(self, path: str) -> str:
        if not self.prefix:
            return path
        return f"{self.prefix}.{path}" if path else self.prefix

    def fail(self, path: str, message: str) -> NoReturn:
        """Raise the :class:`ConfigError` for a value ralph-orchestrator would refuse too."""
        full = self._full(path)
        where = f"{full}: " if full else ""
        raise ConfigError(one_line(f"{self.source}: {where}{message}"))

    def skip(self, path: str, reason: str) -> None:
        """Note that the setting at ``path`` is not translated, and why."""
        self.untranslated.append(one_line(f"{self._full(path)}: {reason}"))

    def note(self, path: str, how: str) -> None:
        """Note how the setting at ``path`` was translated (when that is not plain)."""
        self.notes.append(one_line(f"{self._full(path)}: {how}"))

    def table(self, value: object, path: str) -> dict[str, object]:
        """``value`` as a mapping with string keys; null is an empty one."""
        if value is None:
            return {}
        if not isinstance(value, dict):
            self.fail(path, f"expected a mapping, got {kind(value)}")
        for key in value:
            if not isinstance(key, str):
                self.fail(path, f"keys must be strings, got {kind(key)} {key!r}")
        return dict(value)

    def rest(
        self,
        table: Mapping[str, object],
        path: str,
        translated: Collection[str],
        untranslated: Mapping[str, str],
    ) -> None:
        """Note each key of ``table`` (at ``path``) that is not ``translated``: one of
        ``untranslated`` with its reason when it asks for something, any other as unknown."""
        for key, setting in table.items():
            if key in untranslated:
                if says_something(setting):
                    self.skip(key_path(path, key), untranslated[key])
            elif key not in translated:
                self.skip(key_path(path, key), "unknown key; not translated")

    def _typed(
        self, table: Mapping[str, object], key: str, path: str, types: tuple[type, ...], what: str
    ) -> Any:
        """The value at ``key`` (None: left out) when it is one of ``types`` (a boolean only
        where ``types`` names bool, though Python takes it for an int)."""
        value = table.get(key)
        if value is not None and (
            not isinstance(value, types) or (isinstance(value, bool) and bool not in types)
        ):
            self.fail(key_path(path, key), f"expected {what}, got {kind(value)}")
        return value

    def text(self, table: Mapping[str, object], key: str, path: str) -> str | None:
        """The string at ``key`` (None: left out)."""
        text: str | None = self._typed(table, key, path, (str,), "a string")
        return text

    def texts(self, table: Mapping[str, object], key: str, path: str) -> tuple[str, ...] | None:
        """The list of strings at ``key`` (None: left out)."""
        value: list[object] | None = self._typed(table, key, path, (list,), "a list of strings")
        if value is None:
            return None
        for index, item in enumerate(value):
            if not isinstance(item, str):
                self.fail(f"{key_path(path, key)}[{index}]", f"expected a string, got {kind(item)}")
        return tuple(value)  # type: ignore[arg-type]  # every item was checked a str just above

    def count(self, table: Mapping[str, object], key: str, path: str) -> int | None:
        """The whole number from 0 at ``key`` (None: left out)."""
        value: int | None = self._typed(table, key, path, (int,), "a whole number")
        if value is not None and value < 0:
            self.fail(key_path(path, key), f"must be from 0, got {value}")
        return value

    def amount(self, table: Mapping[str, object], key: str, path: str) -> float | None:
        """The finite number from 0 at ``key`` (None: left out)."""
        value: float | None = self._typed(table, key, path, (int, float), "a number")
        if value is not None and not (math.isfinite(value) and value >= 0):
            self.fail(key_path(path, key), f"must be a number from 0, got {value}")
        return None if value is None else float(value)

    def flag(self, table: Mapping[str, object], key: str, path: str) -> bool | None:
        """The boolean at ``key`` (None: left out)."""
        flag: bool | None = self._typed(table, key, path, (bool,), "true or false")
        return flag
