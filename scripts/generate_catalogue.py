"""Regenerate ``docs/architecture/events.md``, the event catalogue, from the code.

Run after changing the vocabulary: ``python scripts/generate_catalogue.py``.
``tests/architecture/test_docs.py`` fails while the file is out of date.
"""

from __future__ import annotations

import typing
from pathlib import Path

import attrs

from pipeline.events import CATEGORIES, SCHEMA_VERSION, WIRE_TAGS, members

TARGET = Path(__file__).resolve().parent.parent / "docs" / "architecture" / "events.md"


def _type_name(hint: object) -> str:
    if isinstance(hint, type):
        return hint.__name__
    text = repr(hint).replace("typing.", "")
    for prefix in ("pipeline.events.values.", "pipeline.events.error.", "datetime."):
        text = text.replace(prefix, "")
    if text.startswith("Optional[") and text.endswith("]"):
        text = f"{text[len('Optional[') : -1]} | None"
    return text.replace("|", "\\|")  # a bare | would split the Markdown table cell


def source() -> str:
    """The catalogue as Markdown."""
    lines = [
        "# Event catalogue",
        "",
        "Every fact a run can record, by category. Generated from the code by",
        "`scripts/generate_catalogue.py`; a test keeps it up to date. Each event is stored as a",
        "JSON object whose `type` is its wire tag; every event also carries `at`, the time a",
        f"handler read. Schema version: {SCHEMA_VERSION}.",
        "",
    ]
    for category, alias in CATEGORIES.items():
        doc = (alias.__doc__ or "") if isinstance(alias, type) else ""
        lines += [f"## {category}", ""]
        if doc and not isinstance(alias, type):
            lines += [doc, ""]
        lines += ["| wire tag | event | fields | meaning |", "| --- | --- | --- | --- |"]
        for cls in members(alias):
            hints = typing.get_type_hints(cls)
            fields = ", ".join(
                f"`{f.name}: {_type_name(hints[f.name])}`"
                for f in attrs.fields(cls)
                if f.name != "at"
            )
            meaning = (cls.__doc__ or "").strip().splitlines()[0].replace("``", "`")
            lines.append(f"| `{WIRE_TAGS[cls]}` | `{cls.__name__}` | {fields or '-'} | {meaning} |")
        lines.append("")
    return "\n".join(lines)


if __name__ == "__main__":
    TARGET.write_text(source())
