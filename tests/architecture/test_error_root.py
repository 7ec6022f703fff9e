"""One error root: every exception class the library defines is a ``PipelineError``, so an
embedding application can catch ralph's errors, and only them, in one ``except``."""

from __future__ import annotations

import importlib
import inspect
import pkgutil

import pipeline
from pipeline import PipelineError

_TOOLING = ("pipeline.app.testing",)
"""Test tooling (the model server, the throwaway PostgreSQL server), not the library."""


def _library_modules() -> list[str]:
    names = []
    for module in pkgutil.walk_packages(pipeline.__path__, "pipeline."):
        if module.name.startswith(_TOOLING) or module.name.endswith("__main__"):
            continue
        names.append(module.name)
    return names


def test_every_error_the_library_defines_is_a_pipeline_error() -> None:
    """Walk every module of the library; each exception class defined there descends from
    ``PipelineError`` (the check found four that did not: git's, topic patterns', response
    schemas' and the fault variable's)."""
    outside = []
    for name in _library_modules():
        try:
            module = importlib.import_module(name)
        except ImportError:  # an optional extra (psycopg, opentelemetry) not installed
            continue
        for _, value in inspect.getmembers(module, inspect.isclass):
            # Not errors: control flow that no handler may catch (Interrupted), like SIGINT's.
            if value.__module__ != name or not issubclass(value, Exception):
                continue
            if not issubclass(value, PipelineError):
                outside.append(f"{name}.{value.__qualname__}")
    assert outside == []
