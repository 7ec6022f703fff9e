"""The architecture documents stay true to the code."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

from pipeline.core.state import EXIT_CODES, Phase, TerminationReason
from pipeline.events import WIRE_TAGS
from pipeline.events.wire import CATEGORIES

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs" / "architecture"


def test_the_event_catalogue_is_generated_from_the_current_code() -> None:
    """docs/architecture/events.md is what scripts/generate_catalogue.py makes now."""
    sys.path.insert(0, str(ROOT / "scripts"))
    try:
        import generate_catalogue
    finally:
        sys.path.pop(0)
    assert (DOCS / "events.md").read_text() == generate_catalogue.source(), (
        "run: python scripts/generate_catalogue.py"
    )


def test_the_catalogue_names_every_wire_tag() -> None:
    """No event is missing from the catalogue."""
    text = (DOCS / "events.md").read_text()
    missing = [tag for tag in WIRE_TAGS.values() if f"`{tag}`" not in text]
    assert missing == []


def test_the_readme_counts_the_vocabulary_as_the_code_has_it() -> None:
    """The README's "N facts in M categories" is the number of wire tags and categories."""
    text = (ROOT / "README.md").read_text("utf-8")
    found = re.search(r"(\d+) facts in (\d+) categories", text)
    assert found is not None, "the README no longer counts the vocabulary"
    assert (int(found[1]), int(found[2])) == (len(WIRE_TAGS), len(CATEGORIES))


def test_the_termination_table_matches_the_code() -> None:
    """Every reason is in the table with its exit code and success flag, and nothing else is."""
    rows = re.findall(
        r"^\| `(\w+)` \| (\d+) \| (yes|no) \|", (DOCS / "termination.md").read_text(), re.M
    )
    documented = {name: (int(code), success == "yes") for name, code, success in rows}
    expected = {r.value: (EXIT_CODES[r], r.is_success) for r in TerminationReason}
    assert documented == expected


def test_every_termination_reason_has_an_exit_code() -> None:
    """The code's table is complete, and only `completed` is a success."""
    assert set(EXIT_CODES) == set(TerminationReason)
    assert [r for r in TerminationReason if r.is_success] == [TerminationReason.COMPLETED]


@pytest.mark.parametrize("phase", list(Phase), ids=lambda p: p.value)
def test_the_phase_document_names_every_phase(phase: Phase) -> None:
    """phases.md describes every phase there is."""
    if phase is Phase.NOT_STARTED:
        return
    assert phase.name in (DOCS / "phases.md").read_text()


def test_the_docs_link_to_files_that_exist() -> None:
    """Relative links in the docs (the architecture pages, the feature inventory) and the
    README resolve."""
    broken = []
    for doc in [*DOCS.glob("*.md"), *(ROOT / "docs").glob("*.md"), ROOT / "README.md"]:
        for target in re.findall(r"\]\(([^)#:]+)\)", doc.read_text()):
            if not (doc.parent / target).exists():
                broken.append(f"{doc.name}: {target}")
    assert broken == []
