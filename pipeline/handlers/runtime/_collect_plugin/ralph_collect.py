"""ralph's pytest plugin for the collection check (runs inside the gate's own pytest, I/O).

Loaded with ``-p ralph_collect`` (its folder put on ``PYTHONPATH``) into ``pytest
--collect-only``: once collection is done it writes each item's node id and whether a marker
applied at collection keeps it from running (``skip``, a true ``skipif``, ``xfail``, a
unittest skip), one JSON record a line, then an end line with the count. Each line starts
with the token ralph passes in ``RALPH_COLLECT_TOKEN``, which the plugin takes out of the
environment as it loads (before any conftest or test module), so the code under test cannot
read it there and write records of its own. It writes to a copy of the standard output taken
as it loads, so pytest's capturing never swallows it.

It runs under the project's Python, not ralph's: it imports nothing of ralph's nor of
pytest's at its top, and keeps to the standard library.
"""

from __future__ import annotations

import importlib
import json
import os
from typing import Any

_TOKEN = os.environ.pop("RALPH_COLLECT_TOKEN", "")

try:
    _OUT = os.dup(1)
except OSError:
    _OUT = -1


def _write(text: str) -> None:
    data = text.encode("utf-8", "backslashreplace")
    while data:
        data = data[os.write(_OUT, data) :]


def _evaluators() -> tuple[Any, Any]:
    """pytest's own evaluation of skip and xfail marks (conditions as strings included), when
    this pytest has it (6.0 and later)."""
    try:
        skipping = importlib.import_module("_pytest.skipping")
    except ImportError:
        return None, None
    return getattr(skipping, "evaluate_skip_marks", None), getattr(
        skipping, "evaluate_xfail_marks", None
    )


def _marked(item: Any, name: str) -> bool:
    """Without pytest's evaluation: a mark with no condition, or a true one."""
    for mark in item.iter_markers(name=name):
        conditions = mark.args or tuple(v for k, v in mark.kwargs.items() if k == "condition")
        if not conditions or any(not isinstance(c, str) and bool(c) for c in conditions):
            return True
    return False


def _skipped(item: Any) -> str | None:
    skip, xfail = _evaluators()
    try:
        if skip is not None and skip(item) is not None:
            return "skip"
        if skip is None and (_marked(item, "skip") or _marked(item, "skipif")):
            return "skip"
        if xfail is not None and xfail(item) is not None:
            return "xfail"
        if xfail is None and _marked(item, "xfail"):
            return "xfail"
        for owner in (getattr(item, "obj", None), getattr(item, "cls", None)):
            if getattr(owner, "__unittest_skip__", False):
                return "skip"
    except Exception:  # a condition that raises errors the test when it runs: it runs
        return None
    return None


def pytest_collection_finish(session: Any) -> None:
    """Write every collected item, then the end line."""
    if _OUT < 0 or not _TOKEN:
        return
    count = 0
    for item in session.items:
        record = json.dumps({"id": item.nodeid, "skip": _skipped(item)})
        _write(f"{_TOKEN} {record}\n")
        count += 1
    _write(f"{_TOKEN} END {count}\n")
