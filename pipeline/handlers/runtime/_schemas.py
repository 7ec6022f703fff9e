"""Loading the response schemas the hats name: built-in by name, or JSON files (I/O).

Every problem is a :class:`~pipeline.config.ConfigError` naming the hat's key and the file, so
``ralph run`` stops with exit 2 before any agent starts.
"""

from __future__ import annotations

from pathlib import Path

import orjson

from pipeline.config import ConfigError, RalphConfig
from pipeline.events import Json, Role
from pipeline.handlers.responses import InvalidSchemaError, check_schema
from pipeline.responses import BUILTIN_SCHEMAS

__all__ = ["load_response_schemas"]


def load_response_schemas(config: RalphConfig, root: Path, source: str) -> dict[Role, Json]:
    """The schema of every hat that names one (``source``, the config file, names errors)."""
    schemas: dict[Role, Json] = {}
    builtin = ", ".join(sorted(BUILTIN_SCHEMAS))
    for role in Role:
        name = config.hats.for_role(role).response_schema
        if name is None:
            continue
        key = f"{source}: hats.{role.value}.response_schema"
        if name in BUILTIN_SCHEMAS:
            schemas[role] = BUILTIN_SCHEMAS[name]
            continue
        path = root / name
        try:
            schema = Json.of(orjson.loads(path.read_bytes()))
        except OSError as error:
            raise ConfigError(
                f"{key}: cannot read {path}: {error.strerror} (or name a built-in schema: "
                f"{builtin})"
            ) from error
        except (orjson.JSONDecodeError, ValueError) as error:
            raise ConfigError(f"{key}: {path} is not JSON: {error}") from error
        try:
            check_schema(schema)
        except InvalidSchemaError as error:
            raise ConfigError(f"{key}: {path} is {error}") from error
        schemas[role] = schema
    return schemas
