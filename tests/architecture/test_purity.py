"""The pure layers are pure: no clock, randomness, environment or I/O calls in their source.

import-linter (run by the check script) forbids the imports; this scan also catches calls that
need no import of their own, such as ``datetime.now()`` on an imported ``datetime``.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import pipeline

PURE_PACKAGES = ("events", "core", "reducers", "orchestration")
"""The pure folders of ``pipeline/`` (the layer contract's pure rungs)."""
FORBIDDEN_CALLS = {
    "now",
    "utcnow",
    "today",
    "time",
    "monotonic",
    "perf_counter",
    "random",
    "randint",
    "choice",
    "uuid4",
    "uuid1",
    "getenv",
    "open",
    "print",
    "input",
}
ROOT = Path(pipeline.__file__).parent


def _pure_sources() -> list[Path]:
    return sorted(p for pkg in PURE_PACKAGES for p in (ROOT / pkg).rglob("*.py"))


def forbidden_calls(source: str) -> list[str]:
    """The forbidden calls in ``source`` (by the called name, attribute or bare)."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call):
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
            if name in FORBIDDEN_CALLS:
                found.append(f"line {node.lineno}: {name}()")
    return found


@pytest.mark.parametrize("path", _pure_sources(), ids=lambda p: str(p.relative_to(ROOT)))
def test_pure_module_makes_no_clock_random_or_io_calls(path: Path) -> None:
    """Pure modules compute from their inputs only."""
    assert forbidden_calls(path.read_text()) == []


def test_the_scan_catches_a_clock_call() -> None:
    """The scan bites: a reducer reading the clock would be reported."""
    source = "from datetime import datetime\ndef r(s, e):\n    return datetime.now()\n"
    assert forbidden_calls(source) == ["line 3: now()"]


def test_every_pure_package_is_scanned() -> None:
    """The list of pure packages names real packages with code in them."""
    for pkg in PURE_PACKAGES:
        assert list((ROOT / pkg).glob("*.py")), pkg
