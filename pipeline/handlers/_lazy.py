"""Package names imported on first use (PEP 562), for packages a fast command passes through.

A lazy package writes its public names once, as the imports of its ``if TYPE_CHECKING:``
block (which the type checker and a reader follow as ordinary imports), and ends with
``__getattr__ = lazy_names(__name__, globals())``: the first time a name is asked for, that
block is read from the package's source and the name imported from the module it names.
"""

from __future__ import annotations

import importlib
import re

# ``typing`` is imported for the type checker only: ``ralph emit`` loads this module, and
# an agent runs it once per topic.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any


__all__ = ["declared_imports", "lazy_names"]

_BLOCK = re.compile(r"^if TYPE_CHECKING:\n((?:[ \t]+.*\n|[ \t]*\n)*)", re.MULTILINE)
_IMPORT = re.compile(r"from\s+([\w.]+)\s+import\s+(\([^)]*\)|[^\n]+)")


def declared_imports(source: str) -> dict[str, tuple[str, str]]:
    """The names the ``if TYPE_CHECKING:`` block of ``source`` imports: name to (module,
    name there)."""
    found: dict[str, tuple[str, str]] = {}
    block = _BLOCK.search(source)
    if block is None:
        return found
    for module, names in _IMPORT.findall(block.group(1)):
        for item in re.sub(r"#[^\n]*", "", names).strip("()").split(","):
            words = item.split()
            if not words:
                continue
            found[words[-1]] = (module, words[0])  # ``a`` or ``a as b``
    return found


def lazy_names(package: str, namespace: dict[str, Any]) -> Callable[[str], object]:
    """A module ``__getattr__`` for ``package`` that imports each name its ``if
    TYPE_CHECKING:`` block declares when first asked for, and keeps it in ``namespace``."""
    sources: dict[str, tuple[str, str]] = {}

    def attribute(name: str) -> object:
        if not sources:
            with open(namespace["__file__"], encoding="utf-8") as source:
                sources.update(declared_imports(source.read()))
        found = sources.get(name)
        if found is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(found[0]), found[1])
        namespace[name] = value  # looked up once
        return value

    return attribute
