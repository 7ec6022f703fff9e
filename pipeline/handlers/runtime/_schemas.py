"""Loading the response schemas the hats name: built-in by name, or JSON files (I/O).

Every problem is a :class:`~pipeline.core.config.ConfigError` naming the hat's key and the file, so
``ralph run`` stops with exit 2 before any agent starts.
"""

from __future__ import annotations

from pathlib import Path

import orjson

from pipeline.core.config import ConfigError, RalphConfig
from pipeline.core.responses import BUILTIN_SCHEMAS
from pipeline.events import Json, Role
from pipeline.handlers.responses import InvalidSchemaError, check_schema

__all__ = ["load_hat_schemas", "load_response_schemas"]


def load_response_schemas(config: RalphConfig, root: Path, source: str) -> dict[Role, Json]:
    """The schema of every role's hat that names one (``source``, the config file, names
    errors)."""
    schemas: dict[Role, Json] = {}
    for role in Role:
        name = config.hats.for_role(role).response_schema
        if name is not None:
            schemas[role] = _load(name, root, f"{source}: hats.{role.value}.response_schema")
    return schemas


def load_hat_schemas(config: RalphConfig, root: Path, source: str) -> dict[str, Json]:
    """The schema of every topology hat that names one, by the hat's name."""
    return {
        name: _load(hat.response_schema, root, f"{source}: hats.{name}.response_schema")
        for name, hat in config.hats.work.items()
        if hat.response_schema is not None
    }


def _load(name: str, root: Path, key: str) -> Json:
    """A built-in schema by ``name``, or the JSON Schema file it names (relative to ``root``);
    :class:`ConfigError` naming ``key`` when it cannot be."""
    if name in BUILTIN_SCHEMAS:
        return BUILTIN_SCHEMAS[name]
    builtin = ", ".join(sorted(BUILTIN_SCHEMAS))
    path = root / name
    try:
        schema = Json.of(orjson.loads(path.read_bytes()))
    except OSError as error:
        raise ConfigError(
            f"{key}: cannot read {path}: {error.strerror} (or name a built-in schema: {builtin})"
        ) from error
    except (orjson.JSONDecodeError, ValueError) as error:
        raise ConfigError(f"{key}: {path} is not JSON: {error}") from error
    try:
        check_schema(schema)
    except InvalidSchemaError as error:
        raise ConfigError(f"{key}: {path} is {error}") from error
    return schema
