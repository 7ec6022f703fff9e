"""Package names imported on first use (PEP 562), for packages a fast command passes through."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping

# ``typing`` is imported for the type checker only: ``ralph emit`` loads this module, and
# an agent runs it once per topic.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


__all__ = ["lazy_names"]


def lazy_names(
    package: str, namespace: dict[str, Any], sources: Mapping[str, tuple[str, str]]
) -> Callable[[str], object]:
    """A module ``__getattr__`` for ``package`` that imports each name of ``sources`` (name:
    (module, name there)) when first asked for and keeps it in ``namespace``."""

    def attribute(name: str) -> object:
        source = sources.get(name)
        if source is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(source[0]), source[1])
        namespace[name] = value  # looked up once
        return value

    return attribute
