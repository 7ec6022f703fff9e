"""Reading an agent CLI's variables and configuration files the way the CLI does, for its
model endpoints (I/O: reads files; the environment comes in as mappings).

A file that is missing, unreadable, not a regular file, over 1 MiB or malformed reads as
absent: the CLI itself reports (or ignores) it, and the sandbox is no place to fail first. A
value that is present but is no URL is a :class:`~pipeline.core.sandbox.SandboxError` naming where
it was found, since the CLI would send the model's requests there.
"""

from __future__ import annotations

import json
import os
import re
import stat
import tomllib
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Final, final

from attrs import frozen

from pipeline.core.sandbox import Endpoint, SandboxError, parse_endpoint

__all__ = [
    "AgentSetup",
    "Source",
    "Variables",
    "dig",
    "endpoint_in",
    "is_variable_name",
    "read_dotenv",
    "read_json",
    "read_toml",
]

_LIMIT: Final = 1 << 20
"""The largest settings file read: a real one is a few KiB, and the workspace's own files are
the agent's to write between runs."""

_STRING_OR_COMMENT: Final = re.compile(r'"(?:[^"\\\n]|\\.)*"|//[^\n]*|/\*.*?\*/', re.DOTALL)
_STRING_OR_TRAILING_COMMA: Final = re.compile(r'"(?:[^"\\\n]|\\.)*"|,(?=\s*[}\]])')
_DOTENV_QUOTED: Final = re.compile(r"""\s*(['"])(.*?)\1""")
_DOTENV_LINE: Final = re.compile(r"\s*(?:export\s+)?([A-Za-z_][A-Za-z0-9_.-]*)\s*=\s*(.*)")
_VARIABLE_NAME: Final = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def _read_text(path: Path) -> str | None:
    """The text of the regular file ``path``, or None. Opened without blocking and checked
    before reading: a FIFO planted where a settings file was expected must not hang a run's
    start."""
    try:
        descriptor = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(descriptor).st_mode):
            return None
        data = b""
        while len(data) <= _LIMIT and (chunk := os.read(descriptor, _LIMIT + 1 - len(data))):
            data += chunk
    except OSError:
        return None
    finally:
        os.close(descriptor)
    if len(data) > _LIMIT:
        return None
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError:
        return None


def _without_comments(text: str) -> str:
    """JSONC as JSON: comments dropped, then commas before ``}`` or ``]``; strings kept."""

    def keep_strings(found: re.Match[str]) -> str:
        return found[0] if found[0].startswith('"') else ""

    plain = _STRING_OR_COMMENT.sub(keep_strings, text)
    return _STRING_OR_TRAILING_COMMA.sub(keep_strings, plain)


def read_json(path: Path, *, comments: bool = False) -> object | None:
    """The JSON value in ``path`` (JSONC, with comments and trailing commas, when
    ``comments``), or None when it cannot be read or parsed."""
    text = _read_text(path)
    if text is None:
        return None
    try:
        value: object = json.loads(_without_comments(text) if comments else text)
    except json.JSONDecodeError:
        return None
    return value


def read_toml(path: Path) -> Mapping[str, object] | None:
    """The table in the TOML file ``path``, or None when it cannot be read or parsed."""
    text = _read_text(path)
    if text is None:
        return None
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError:
        return None


def _dotenv_value(raw: str) -> str:
    quoted = _DOTENV_QUOTED.match(raw)
    if quoted is not None:
        return quoted[2].replace("\\n", "\n") if quoted[1] == '"' else quoted[2]
    # an unquoted value ends at a comment that follows a space
    return re.split(r"\s#", raw, maxsplit=1)[0].strip()


def read_dotenv(path: Path) -> dict[str, str] | None:
    """The ``NAME=value`` pairs of the ``.env`` file ``path`` (``export``, quotes and comments
    as dotenv reads them; a later line wins), or None when it cannot be read."""
    text = _read_text(path)
    if text is None:
        return None
    pairs: dict[str, str] = {}
    for line in text.splitlines():
        found = _DOTENV_LINE.fullmatch(line)
        if found is not None:
            pairs[found[1]] = _dotenv_value(found[2])
    return pairs


def dig(value: object, *keys: str) -> object | None:
    """``value[k1][k2]...`` through JSON objects or TOML tables, or None where one is not a
    table or has no such key."""
    for key in keys:
        if not isinstance(value, Mapping):
            return None
        value = value.get(key)
    return value


def is_variable_name(name: str) -> bool:
    """Whether ``name`` is an environment variable's name (and so no pattern: a ``*`` a CLI's
    settings named would pass every variable)."""
    return _VARIABLE_NAME.fullmatch(name) is not None


def endpoint_in(value: object, where: str) -> Endpoint | None:
    """The endpoint the base URL ``value`` points at; None when it is absent or blank (the
    CLIs take an empty setting as unset). Raises :class:`SandboxError` naming ``where`` (the
    variable or the file and key) when it is not a URL with a host the sandbox can allow."""
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    if not isinstance(value, str):
        raise SandboxError(f"{where} must be a URL, got {type(value).__name__} {value!r}")
    try:
        return parse_endpoint(value.strip())
    except SandboxError as error:
        raise SandboxError(f"{where} is not a model endpoint: {error}") from None


@final
@frozen(kw_only=True)
class Source:
    """Variables from one place (the agent's ``env``, the environment, a ``.env`` file), named
    for messages by ``where``."""

    where: str
    values: Mapping[str, str]


@final
class Variables:
    """A CLI's view of its variables: ``sources`` from the one that wins to the one that
    loses. A variable is taken from the first source that sets it; set to a blank value
    there, it counts as unset, as the CLIs take it."""

    def __init__(self, sources: Sequence[Source]) -> None:
        """Look names up in ``sources``, the winning one first."""
        self._sources = tuple(sources)

    def value(self, name: str) -> tuple[str, str] | None:
        """The value of ``name`` and where it was found (``NAME in the agent's env``)."""
        for source in self._sources:
            if name in source.values:
                text = source.values[name].strip()
                return (text, f"{name} in {source.where}") if text else None
        return None

    def first(self, names: Sequence[str]) -> tuple[str, str] | None:
        """The value of the first of ``names`` that is set, as :meth:`value` gives it."""
        for name in names:
            found = self.value(name)
            if found is not None:
                return found
        return None

    def endpoint(self, names: Sequence[str]) -> Endpoint | None:
        """The endpoint the first of ``names`` that is set points at (see
        :func:`endpoint_in`), or None."""
        found = self.first(names)
        return None if found is None else endpoint_in(found[0], found[1])

    def extended(self, *, over: Sequence[Source] = (), under: Sequence[Source] = ()) -> Variables:
        """These variables with ``over`` winning over them (aider's ``.env`` files) and
        ``under`` losing to them (Gemini CLI's)."""
        return Variables((*over, *self._sources, *under))

    def merged(self) -> dict[str, str]:
        """Every variable with the value that wins."""
        values: dict[str, str] = {}
        for source in reversed(self._sources):
            values.update(source.values)
        return values


@final
@frozen(kw_only=True)
class AgentSetup:
    """What the derivation knows of one agent: its ``variables`` (its ``env`` over the
    environment), the ``home`` and ``workspace`` it runs in (None: no workspace files are
    read) and the ``model`` ralph passes it."""

    variables: Variables
    home: str
    workspace: Path | None
    model: str | None

    @property
    def environ(self) -> dict[str, str]:
        """The environment the agent's process gets."""
        return self.variables.merged()
