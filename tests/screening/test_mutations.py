"""The examples bite: with a detector or a pattern taken out, its example tests fail.

Each mutation patches one piece of the screen away for the length of one call and runs the
example that should catch it.
"""

from __future__ import annotations

from collections.abc import Callable

import attrs
import pytest

from pipeline.core.screening import Language, _added, _languages, _screen
from tests.screening import test_detectors as examples


def _fails(example: Callable[[], None]) -> bool:
    try:
        example()
    except AssertionError:
        return True
    return False


def test_without_the_lost_tests_detector_its_examples_fail(monkeypatch: pytest.MonkeyPatch) -> None:
    """Deleting, emptying and removing are all caught by ``lost_tests``: without it, none is."""
    monkeypatch.setattr(_screen, "lost_tests", lambda pairs: [])
    for language in Language:
        for example in (
            examples.test_a_deleted_test_file_is_named_with_its_tests,
            examples.test_an_emptied_test_file_is_named,
            examples.test_a_removed_test_is_named_with_its_file,
        ):
            assert _fails(lambda example=example, language=language: example(language))


def test_without_the_skip_finder_the_skip_examples_fail(monkeypatch: pytest.MonkeyPatch) -> None:
    """``skip_added`` rests on ``find_skips``: with it finding nothing, the example fails."""
    monkeypatch.setattr(_added, "find_skips", lambda language, text: ())
    form = examples.SKIP_FORMS[Language.GO][0]
    assert _fails(lambda: examples.test_an_added_skip_is_named_at_its_line(Language.GO, form))


def test_without_one_language_s_assertions_its_example_fails(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The per-language table is read: Rust without assertion patterns misses a removal."""
    rust = _languages.SYNTAX[Language.RUST]
    monkeypatch.setitem(_languages.SYNTAX, Language.RUST, attrs.evolve(rust, assertions=()))
    assert _fails(lambda: examples.test_a_removed_assertion_is_named_with_its_file(Language.RUST))
    assert not _fails(
        lambda: examples.test_a_removed_assertion_is_named_with_its_file(Language.PYTHON)
    )


def test_without_the_protection_check_its_examples_fail(monkeypatch: pytest.MonkeyPatch) -> None:
    """``protected_changed`` for the run's configuration goes with ``_protected``."""
    monkeypatch.setattr(_screen, "_protected", lambda pair, rules: None)
    change = examples._modified("ralph.toml", "a", "b")
    assert _fails(
        lambda: examples.test_protected_paths(
            change, "ralph.toml", "modified (the run's configuration)"
        )
    )
