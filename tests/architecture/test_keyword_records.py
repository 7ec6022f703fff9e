"""Every record is keyword-built: each attrs class the library defines is ``kw_only``, so a call
names what it sets (``ProcessResult(exit_code=0, duration_ms=12, ...)``, not seven bare values
whose order a reader must look up). A few one- or two-field values whose positional call reads
as the value itself are listed in ``POSITIONAL`` with the reason."""

from __future__ import annotations

import importlib
import inspect
import pkgutil

import attrs
from attrs import define, field, frozen

import pipeline

POSITIONAL: dict[str, str] = {
    "pipeline.events._json.Json": "a one-string wrapper, like a NewType: Json(text)",
    "pipeline.core.sandbox._endpoint.Endpoint": "an address, written as one: Endpoint(host, port)",
    "pipeline.engine.simulation._choosers.Always": "a one-field script word: Always(answer)",
}
"""The classes allowed to be called positionally, by qualified name, with the reason."""

_MOST_FIELDS_POSITIONAL = 2
"""An exception is a small value; a record with more fields always names them."""


def _modules() -> list[str]:
    return [
        module.name
        for module in pkgutil.walk_packages(pipeline.__path__, "pipeline.")
        if not module.name.endswith("__main__")  # running it would start the CLI
    ]


def _records() -> dict[str, type]:
    """Every attrs class defined in a module of ``pipeline``, by qualified name."""
    found: dict[str, type] = {}
    for name in _modules():
        try:
            module = importlib.import_module(name)
        except ImportError:  # an optional extra (psycopg, opentelemetry) not installed
            continue
        for _, value in inspect.getmembers(module, inspect.isclass):
            if value.__module__ == name and attrs.has(value):
                found[f"{name}.{value.__qualname__}"] = value
    return found


def positional_fields(cls: type) -> list[str]:
    """The fields of an attrs class that its ``__init__`` takes by position."""
    return [a.name for a in attrs.fields(cls) if a.init and not a.kw_only]


def test_every_record_the_library_defines_is_keyword_built() -> None:
    """Walk every module of ``pipeline``: no attrs class there takes a field by position,
    except the listed small values (the check found 208 of 323 that did)."""
    records = _records()
    # The walk reached the library, not one package (300 records at stop 47, 323 before).
    assert len(records) > 250
    positional = {
        name: positional_fields(cls)
        for name, cls in records.items()
        if name not in POSITIONAL and positional_fields(cls)
    }
    assert positional == {}


def test_each_positional_exception_is_a_small_positional_value() -> None:
    """An exception names a class that still exists, is still positional (else it is stale)
    and has at most two fields (else its call would read as a list of bare values)."""
    records = _records()
    for name in POSITIONAL:
        cls = records[name]
        fields = positional_fields(cls)
        assert fields, f"{name} is keyword-built now: drop it from POSITIONAL"
        assert len(attrs.fields(cls)) <= _MOST_FIELDS_POSITIONAL, name


def test_the_check_tells_a_positional_record_from_a_keyword_one() -> None:
    """The check sees a class left positional, one field taken by position in a keyword
    class, and passes only a wholly keyword-built one."""

    @frozen
    class Positional:
        first: int
        second: int

    @define(kw_only=True)
    class Mixed:
        first: int
        second: int = field(kw_only=False)

    @frozen(kw_only=True)
    class Keyword:
        first: int
        second: int

    assert positional_fields(Positional) == ["first", "second"]
    assert positional_fields(Mixed) == ["second"]
    assert positional_fields(Keyword) == []
