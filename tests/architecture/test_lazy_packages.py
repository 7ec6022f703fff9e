"""The packages that import their names on first use declare each name once (the imports of
their ``if TYPE_CHECKING:`` block): every public name is declared, and each resolves to the
object its module defines."""

from __future__ import annotations

import importlib
import subprocess
import sys
from types import ModuleType

import pytest

from pipeline.handlers._lazy import declared_imports

LAZY = (
    "pipeline.handlers",
    "pipeline.handlers.intake",
    "pipeline.handlers.runtime",
    "pipeline.handlers.store",
    "pipeline.app.workspace",
)


@pytest.mark.parametrize("name", LAZY)
def test_a_lazy_package_declares_and_resolves_each_public_name(name: str) -> None:
    """``__all__`` is exactly what the block declares, and each name is its module's."""
    package: ModuleType = importlib.import_module(name)
    assert package.__file__ is not None
    with open(package.__file__, encoding="utf-8") as source:
        declared = declared_imports(source.read())
    assert sorted(declared) == sorted(package.__all__)
    for public, (module, there) in declared.items():
        assert getattr(package, public) is getattr(importlib.import_module(module), there)
    with pytest.raises(AttributeError, match="has no attribute 'nothing_here'"):
        _ = package.nothing_here


def test_the_block_is_read_with_renames_comments_and_nothing_after_it() -> None:
    """``a as b`` declares ``b``; a comment is no name; imports after the block are not read."""
    source = (
        "TYPE_CHECKING = False\n"
        "if TYPE_CHECKING:\n"
        "    from m.one import a, b as c  # two\n"
        "    from m.two import (\n"
        "        d,\n"
        "        # e is not a name\n"
        "        f,\n"
        "    )\n"
        "\n"
        "from m.three import g\n"
    )
    assert declared_imports(source) == {
        "a": ("m.one", "a"),
        "c": ("m.one", "b"),
        "d": ("m.two", "d"),
        "f": ("m.two", "f"),
    }


def test_one_store_module_loads_no_other_store() -> None:
    """Importing the hash chain's ``link`` (as the lean ``ralph status`` does) loads neither
    the store's adapters nor the events: the store package imports its names on first use."""
    probe = "import sys, pipeline.handlers.store._link; print(' '.join(sys.modules))"
    loaded = set(
        subprocess.run(
            [sys.executable, "-c", probe], capture_output=True, text=True, check=True
        ).stdout.split()
    )
    assert not {"pipeline.events", "pipeline.handlers.store._sqlite"} & loaded
