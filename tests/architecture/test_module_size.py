"""No module of the library is over 400 lines: a module that grows past it has two jobs."""

from __future__ import annotations

from pathlib import Path

import pipeline

LIMIT = 400


def test_no_module_is_over_400_lines() -> None:
    """Every module under ``pipeline/`` (the package the users import) fits in 400 lines."""
    root = Path(pipeline.__file__).parent
    modules = sorted(root.rglob("*.py"))
    assert len(modules) > 100, "the walk found the package's modules"
    long = {
        str(path.relative_to(root)): lines
        for path in modules
        if (lines := len(path.read_text("utf-8").splitlines())) > LIMIT
    }
    assert long == {}, f"modules over {LIMIT} lines: {long}"
