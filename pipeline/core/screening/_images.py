"""A change's two images, classified once for every detector (pure).

An image is one side of a :class:`FileChange`: the old text at the old path, or the new text
at the path. A missing text (binary, too large, unreadable) reads as empty: a test file
replaced by bytes the screen cannot read has lost its tests, which fails closed.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import final

from attrs import frozen

from pipeline.core.screening._classify import classify, has_test_attribute
from pipeline.core.screening._lines import is_binary
from pipeline.core.screening._model import ChangeStatus, FileChange, Language

__all__ = ["Image", "Pair", "pairs"]


@final
@frozen(kw_only=True)
class Image:
    """One side of a change: its path, its readable text ("" if none) and its class."""

    path: str
    text: str
    language: Language | None
    test_code: bool
    runner_config: bool


@final
@frozen(kw_only=True)
class Pair:
    """A change with its old image (None when added) and new image (None when deleted)."""

    change: FileChange
    old: Image | None
    new: Image | None


def _readable(text: str | None) -> str:
    return "" if text is None or is_binary(text) else text


def _image(path: str, text: str, other: str, test_paths: tuple[str, ...]) -> Image:
    found = classify(path, text, test_paths)
    # "In either image": a Rust file whose last #[test] was deleted is still test code.
    test_code = found.test_code or has_test_attribute(found.language, other)
    return Image(
        path=path,
        text=text,
        language=found.language,
        test_code=test_code,
        runner_config=found.runner_config,
    )


def _order(change: FileChange) -> tuple[str, str, str, str, str]:
    return (
        change.path,
        change.old_path or "",
        change.status,
        change.old_text or "",
        change.new_text or "",
    )


def pairs(changes: Iterable[FileChange], test_paths: tuple[str, ...]) -> tuple[Pair, ...]:
    """Every change with its images, in one order whatever order the changes came in."""
    built = []
    for change in sorted(changes, key=_order):
        old_text = _readable(change.old_text)
        new_text = _readable(change.new_text)
        old = (
            None
            if change.status is ChangeStatus.ADDED
            else _image(change.before, old_text, new_text, test_paths)
        )
        new = (
            None
            if change.status is ChangeStatus.DELETED
            else _image(change.path, new_text, old_text, test_paths)
        )
        built.append(Pair(change=change, old=old, new=new))
    return tuple(built)
