"""An event as one line for people, made from its wire form: the JSON object the store keeps
and the converter writes (pure formatting, no I/O).

It reads the stored fields and needs no event class, so ``ralph events`` can print a run from
the store's rows without importing the events or the converter (``_events_quick``); the full
command renders a decoded event through the same function, from its unstructured form. What
the wire does not say (that a string is a time, that an object is a record, a chain or a
payload) is named here by field (a test holds these tables to the event classes' fields).
"""

from __future__ import annotations

from datetime import datetime

import orjson

from pipeline.app.cli._safe import terminal_safe

# ``typing`` is imported for the type checker only, as in ``pipeline.app.cli._emit``.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any, Final

__all__ = ["CHAINS", "PAYLOADS", "RECORDS", "TIMES", "describe", "event_line", "show", "time_text"]

TIMES: Final = frozenset({"at", "emitted_at", "resets_at", "until", "deadline", "given_at"})
"""Fields that hold a time (shown to the second)."""
RECORDS: Final = {"budget": "Budget", "loop": "LoopPolicy", "note": "ContextNote"}
"""Fields that hold a record, shown by its class's name (where their value is an object:
``error.budget_exceeded``'s ``budget`` is a kind, ``agent.usage_reported``'s ``note`` text)."""
PAYLOADS: Final = frozenset({"payload"})
"""Fields that hold any JSON value (shown as its canonical text, ``null`` included)."""
CHAINS: Final = frozenset({"chains"})
"""Fields that hold role chains (shown as ``role:first>fallback``)."""

_MAX_VALUE = 60
_MAX_PATH = 240
"""A log's path is shown whole up to this (a path cut short cannot be opened)."""
_HITS_NAMED = 3
"""Hits a one-line account of a screen names; the rest are counted."""
_SHORT_SHA = 12


def time_text(value: str) -> str:
    """A time as the wire writes it (ISO 8601), to the second."""
    return datetime.fromisoformat(value).isoformat(timespec="seconds")


def _plain(name: str, value: Any) -> str:
    """Field ``name``'s wire ``value`` as people read it."""
    if name in PAYLOADS:
        return orjson.dumps(value, option=orjson.OPT_SORT_KEYS).decode()
    if name in CHAINS:
        return ",".join(f"{chain['role']}:{'>'.join(chain['agents'])}" for chain in value)
    if name in TIMES and isinstance(value, str):
        return time_text(value)
    if isinstance(value, dict):
        return RECORDS.get(name) or orjson.dumps(value).decode()
    if isinstance(value, list):
        return ",".join(str(item) for item in value)
    return str(value)


def show(text: str, limit: int = _MAX_VALUE) -> str:
    """``text`` on one line, made terminal-safe, a digest shortened, cut at ``limit``."""
    text = terminal_safe(text)  # agent text: never a control sequence
    if len(text) == 64 and all(c in "0123456789abcdef" for c in text):
        return text[:12]  # a sha256 digest: the prefix identifies it for people
    # One fact, one line: a multi-line value (a commit message) keeps its breaks as \n.
    text = text.replace("\r", "\\r").replace("\n", "\\n")
    return text if len(text) <= limit else text[: limit - 1] + "…"


def describe(data: Mapping[str, Any]) -> str:
    """One line from an event's wire form: its tag and its fields but the time; a gate's
    report says how it ended, the last line of its output and where the whole output is; a
    screen, what it found."""
    tag = data["type"]
    if tag == "validation.gate_finished":
        return _gate_finished(data)
    if tag == "validation.changes_screened":
        return _changes_screened(data)
    if tag == "validation.screen_base_recorded":
        return f"{tag} sha={_commit(data['sha'])}"
    if tag == "lifecycle.sandbox_checked":
        # The withheld names can be many: how many, here; which, in the log and the report.
        withheld = data["withheld"]
        more = f" withheld={len(withheld)} variables" if withheld else ""
        return f"{tag} mode={data['mode']} {show(data['said'])}{more}"
    fields = [
        f"{name}={show(_plain(name, value))}"
        for name, value in data.items()
        if name not in ("type", "at") and (value is not None or name in PAYLOADS)
    ]
    return f"{tag} " + " ".join(fields)


def event_line(number: int, data: Mapping[str, Any]) -> str:
    """The line ``ralph events`` prints for event ``number`` (its wire form ``data``)."""
    return f"{number:>5}  {time_text(data['at'])}  {describe(data)}"


def _gate_finished(data: Mapping[str, Any]) -> str:
    """A gate's report on one line. Its command and output digest are left to the log: the
    command can be a whole script, and the first characters of its output say less than its
    last line (a test runner's summary)."""
    fields = [f"gate={show(data['gate'])}", f"boundary={data['boundary']}"]
    fields.append(f"status={data['status']}")
    if data["exit_code"] is not None:
        fields.append(f"exit_code={data['exit_code']}")
    fields.append(f"duration={data['duration_ms'] / 1000:.3f}s")
    last = data["tail"].rstrip().rsplit("\n", 1)[-1].strip()
    if last:
        fields.append(f"last_line={show(last)}")
    fields.append(f"log_path={show(data['log_path'], _MAX_PATH)}")
    pinned = "" if data["pinned"] is None else f" pinned={_commit(data['pinned'])}"
    return f"{data['type']} " + " ".join(fields) + pinned


def _commit(sha: str | None) -> str:
    """A commit as people read it: its first characters, or ``empty-tree`` for none."""
    return "empty-tree" if sha is None else show(sha[:_SHORT_SHA])


def _changes_screened(data: Mapping[str, Any]) -> str:
    """A screen's report on one line: where from, how many files, and its first hits (kind
    and place; their details are in the log and the report)."""
    hits = data["hits"]
    named = "; ".join(
        show(f"{h['kind']} {h['path']}:{h['line']}" if h["line"] else f"{h['kind']} {h['path']}")
        for h in hits[:_HITS_NAMED]
    )
    more = f"; and {len(hits) - _HITS_NAMED} more" if len(hits) > _HITS_NAMED else ""
    found = f"({named}{more})" if hits else "(clean)"
    return (
        f"{data['type']} scope={data['scope']} base={_commit(data['base'])} "
        f"files={data['files']} hits={len(hits)} {found}"
    )
