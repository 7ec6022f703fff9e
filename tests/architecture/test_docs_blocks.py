"""Every Python block in the README and the architecture docs runs, as written.

The blocks of one file run in order in one namespace (a later block may use what an earlier
one made, as a reader would), in a scratch directory. What a block takes from its context
rather than defining (the PostgreSQL URL of scale-out.md, the projection the README's
property test checks) is given here, by file; any ``test_*`` function a block defines is then
called, so an example test is run, not only defined.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.workers.support import queue_workspace

ROOT = Path(__file__).resolve().parents[2]
DOCUMENTS = sorted([ROOT / "README.md", *(ROOT / "docs").rglob("*.md")])
_BLOCK = re.compile(r"^( *)```python\n(.*?)^\1```", re.M | re.S)


def python_blocks(text: str) -> list[str]:
    """The ```python blocks of a Markdown text, dedented to their fence."""
    blocks = []
    for match in _BLOCK.finditer(text):
        indent = len(match.group(1))
        lines = match.group(2).splitlines()
        blocks.append("\n".join(line[indent:] for line in lines) + "\n")
    return blocks


def test_the_block_finder_finds_indented_and_plain_blocks() -> None:
    """A block inside a list item (indented fence) is found and dedented; other languages
    are not Python."""
    text = (
        "x\n```python\na = 1\n```\n- item\n\n  ```python\n  b = a + 1\n  ```\n```toml\nc=1\n```\n"
    )
    assert python_blocks(text) == ["a = 1\n", "b = a + 1\n"]


def _given_for_readme(_tmp_path: Path, _request: pytest.FixtureRequest) -> dict[str, Any]:
    return {"my_projection": lambda state: state.phase}


def _given_for_scale_out(tmp_path: Path, request: pytest.FixtureRequest) -> dict[str, Any]:
    queue_workspace(tmp_path / "repo-a")
    return {"url": request.getfixturevalue("postgres_url")}


GIVEN: dict[str, Callable[[Path, pytest.FixtureRequest], dict[str, Any]]] = {
    "README.md": _given_for_readme,
    "scale-out.md": _given_for_scale_out,
}
"""What a document's blocks take from their context, by file name."""


def _documents_with_blocks() -> Iterator[Path]:
    for document in DOCUMENTS:
        if python_blocks(document.read_text("utf-8")):
            yield document


@pytest.mark.parametrize(
    "document", list(_documents_with_blocks()), ids=lambda p: str(p.relative_to(ROOT))
)
def test_every_python_block_runs(
    document: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    request: pytest.FixtureRequest,
) -> None:
    """The document's blocks run in order in one namespace; the tests they define pass."""
    monkeypatch.chdir(tmp_path)
    given = GIVEN.get(document.name)
    namespace: dict[str, Any] = {"__name__": "docs_block"}
    if given is not None:
        namespace.update(given(tmp_path, request))
    for number, block in enumerate(python_blocks(document.read_text("utf-8")), start=1):
        code = compile(block, f"{document.relative_to(ROOT)} block {number}", "exec")
        exec(code, namespace)  # the project's own documentation, run as a reader would
    for name, value in list(namespace.items()):
        if name.startswith("test_") and callable(value):
            value()


def test_every_document_with_context_has_blocks() -> None:
    """A name in :data:`GIVEN` is a document that still has Python blocks (no stale entry)."""
    with_blocks = {p.name for p in _documents_with_blocks()}
    assert set(GIVEN) <= with_blocks
