"""Scripts from data files: rules matched against each request, first match wins (pure).

A rules file (TOML or JSON) is what a user writes to script a model without Python::

    [[rules]]
    kind = "development"          # ralph's prompt kind (optional)
    turn = 0                      # the model turn within the invocation (optional)
    prompt_contains = "failing"   # text the user messages hold (optional)
    [rules.reply]
    actions = [{ write_file = { path = "app.py", content = "x = 1\\n" } }]

Conditions also include ``api``, ``model`` and ``tool_result_contains``. An action is
``{ shell = "cmd" }``, ``{ write_file = { path, content } }`` or ``{ tool = { name,
arguments } }``; a reply may carry ``text``, ``usage``, ``error`` and ``chunk_delay_s``. A
request no rule matches is answered with ``default`` (a short text unless given).
"""

from __future__ import annotations

import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any, final

import cattrs
import orjson
from attrs import field, frozen
from cattrs.v import format_exception

from pipeline.core._strict import configure_primitives
from tests.model_server._ralph import SIDE_REPLY, prompt_kind
from tests.model_server._script import (
    Action,
    Api,
    ApiError,
    ModelReply,
    ModelRequest,
    Shell,
    ToolCall,
    Usage,
    WriteFile,
)

__all__ = ["Rule", "RulesScript", "ScriptFileError", "load_rules"]


class ScriptFileError(ValueError):
    """A rules file that cannot be read or does not fit the format; names the file and field."""


@final
@frozen(kw_only=True)
class _ActionEntry:
    shell: str | None = None
    write_file: WriteFile | None = None
    tool: ToolCall | None = None

    def action(self) -> Action:
        given: list[Action] = [a for a in (self.write_file, self.tool) if a is not None]
        if self.shell is not None:
            given.append(Shell(self.shell))
        if len(given) != 1:
            raise ValueError("an action is exactly one of shell, write_file and tool")
        return given[0]


@final
@frozen(kw_only=True)
class _ReplyEntry:
    text: str = ""
    actions: tuple[_ActionEntry, ...] = ()
    usage: Usage = field(factory=Usage)
    error: ApiError | None = None
    chunk_delay_s: float = 0.0

    def reply(self) -> ModelReply:
        actions = tuple(entry.action() for entry in self.actions)
        return ModelReply(
            text=self.text,
            actions=actions,
            usage=self.usage,
            error=self.error,
            chunk_delay_s=self.chunk_delay_s,
        )


@final
@frozen(kw_only=True)
class Rule:
    """When a request matches every condition given, answer with ``reply``."""

    reply: ModelReply
    kind: str | None = None
    turn: int | None = None
    prompt_contains: str | None = None
    tool_result_contains: str | None = None
    api: Api | None = None
    model: str | None = None

    def matches(self, request: ModelRequest) -> bool:
        """Whether every condition holds for ``request``."""
        result = request.last_tool_result or ""
        return (
            (self.kind is None or prompt_kind(request.prompt) == self.kind)
            and (self.turn is None or request.turn == self.turn)
            and (self.prompt_contains is None or self.prompt_contains in request.prompt)
            and (self.tool_result_contains is None or self.tool_result_contains in result)
            and (self.api is None or request.api is self.api)
            and (self.model is None or request.model == self.model)
        )


@final
@frozen(kw_only=True)
class RulesScript:
    """A script answering with the first matching rule's reply."""

    rules: tuple[Rule, ...]
    default: ModelReply = field(default=SIDE_REPLY)

    def __call__(self, request: ModelRequest) -> ModelReply:
        """The reply to ``request``."""
        return next((r.reply for r in self.rules if r.matches(request)), self.default)


@final
@frozen(kw_only=True)
class _RulesFile:
    rules: tuple[Rule, ...] = ()
    default: ModelReply = SIDE_REPLY


def _converter() -> cattrs.Converter:
    """Rules as written: a reply is read through its file shape (actions as tables)."""
    converter = cattrs.Converter(forbid_extra_keys=True)
    configure_primitives(converter)  # "3" is not a turn: nothing a person wrote is coerced

    def reply(value: Any, _type: Any) -> ModelReply:
        return converter.structure(value, _ReplyEntry).reply()

    converter.register_structure_hook(ModelReply, reply)
    return converter


_CONVERTER = _converter()


def _explain(error: BaseException, type_: Any) -> str:
    """cattrs' words for an error, or the error's own where it says more (a bad action)."""
    if type(error) is ValueError and str(error):
        return str(error)
    return format_exception(error, type_)


def _rules(data: Mapping[str, Any], source: str) -> RulesScript:
    try:
        parsed = _CONVERTER.structure(data, _RulesFile)
    except (cattrs.BaseValidationError, ValueError) as error:
        details = (
            "; ".join(cattrs.transform_error(error, format_exception=_explain))
            if isinstance(error, cattrs.BaseValidationError)
            else str(error)
        )
        raise ScriptFileError(f"{source}: {details}") from error
    return RulesScript(rules=parsed.rules, default=parsed.default)


def load_rules(path: Path) -> RulesScript:
    """The script a rules file (``.toml`` or ``.json``) describes."""
    try:
        raw = path.read_bytes()
        data = tomllib.loads(raw.decode()) if path.suffix == ".toml" else orjson.loads(raw)
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError, orjson.JSONDecodeError) as error:
        raise ScriptFileError(f"cannot read the script {path}: {error}") from error
    if not isinstance(data, Mapping):
        raise ScriptFileError(f"{path}: the script is not a table of rules")
    return _rules(data, str(path))
