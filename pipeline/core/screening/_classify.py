"""Which paths are test code, CI files, test-runner configuration or Markdown, and a
change's two images classified once for every detector (pure).

A path is classified by its name and, for Rust and Java/Kotlin, where tests live beside the
code, by whether its text has a test attribute.

Path globs are read as the configuration writes them: a glob without ``/`` matches a file's
name in any folder (``conftest.py``, ``*.spec.*``); a glob with ``/`` is anchored at the
workspace root, and ``**`` spans any number of folders, none included (``tests/**``,
``**/__tests__/**``). ``*`` and ``?`` never cross a ``/``.

An image is one side of a :class:`FileChange`: the old text at the old path, or the new text
at the path. A missing text (binary, too large, unreadable) reads as empty: a test file
replaced by bytes the screen cannot read has lost its tests, which fails closed.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable
from typing import Final, final

from attrs import frozen

from pipeline.core.screening._languages import SYNTAX, language_of
from pipeline.core.screening._lines import is_binary, lines
from pipeline.core.screening._model import ChangeStatus, FileChange, Language

__all__ = [
    "CI_PATTERNS",
    "MIXED_FILES",
    "RUNNER_FILES",
    "RUN_CONFIGURATION",
    "TEST_PATTERNS",
    "Image",
    "Pair",
    "classify",
    "has_test_attribute",
    "is_markdown",
    "matches_any",
    "pairs",
    "runner_header",
    "runner_sections",
]


@functools.lru_cache(maxsize=512)
def _compile(pattern: str) -> re.Pattern[str]:
    anchored = "/" in pattern.rstrip("/")
    glob = pattern.strip("/") if anchored else pattern.rstrip("/")
    out: list[str] = []
    i = 0
    while i < len(glob):
        c = glob[i]
        if glob.startswith("**/", i):
            out.append("(?:[^/]*/)*")
            i += 3
        elif glob.startswith("**", i):
            out.append(".*")
            i += 2
        elif c == "*":
            out.append("[^/]*")
            i += 1
        elif c == "?":
            out.append("[^/]")
            i += 1
        else:
            out.append(re.escape(c))
            i += 1
    body = "".join(out)
    return re.compile(body if anchored else f"(?:.*/)?{body}", re.DOTALL)


def matches_any(path: str, patterns: tuple[str, ...]) -> bool:
    """Whether ``path`` (relative, ``/``-separated) matches one of ``patterns``."""
    return any(_compile(p).fullmatch(path) for p in patterns)


TEST_PATTERNS: Final = (
    "test_*.py",
    "*_test.py",
    "**/tests/**",
    "**/test/**",
    "**/__tests__/**",
    "*.test.*",
    "*.spec.*",
    "*_test.go",
    "*Test.java",
    "*Test.kt",
    "*Tests.java",
    "**/src/test/**",
)
"""The built-in test-file globs (``[tamper] test_paths`` adds more)."""

CI_PATTERNS: Final = (
    ".github/workflows/**",
    "/.gitlab-ci.yml",
    ".circleci/**",
    "/Jenkinsfile",
    "/azure-pipelines.yml",
    ".buildkite/**",
    "/.travis.yml",
    ".ci/**",
)
"""CI files, anchored at the workspace root: any change to one is a ``protected_changed``."""

RUN_CONFIGURATION: Final = "ralph.toml"
"""The run's configuration, protected like a CI file."""

RUNNER_FILES: Final = (
    "pytest.ini",
    ".pytest.ini",
    "pytest.toml",
    ".pytest.toml",
    "conftest.py",
    "jest.config.*",
    "vitest.config.*",
    ".mocharc*",
)
"""Files that configure a test runner whole: the screen reads them for filters, and a pinned
gate takes them from the base."""

_SECTIONED: Final = ("tox.ini", "setup.cfg", "pyproject.toml")

_INI: Final = ("pytest.ini", ".pytest.ini", "tox.ini", "setup.cfg")
"""Runner files pytest reads with its INI reader, which ends a line at every break
``str.splitlines`` knows (a form feed, a lone carriage return, U+2028), not at ``\\n`` only."""

MIXED_FILES: Final = (*_SECTIONED, "package.json")
"""Files where only the runner's sections (keys) configure it; elsewhere they hold other
tools' settings, whose ``exclude`` lines are none of the screen's business and whose
dependencies a pinned gate keeps as the agent has them."""

_MARKDOWN: Final = (".md", ".markdown", ".mdx")


@final
@frozen(kw_only=True)
class Image:
    """One path as the screen reads it (one side of a change): its readable text ("" if
    none), its language, and whether it is test code or a runner's configuration."""

    path: str
    text: str
    language: Language | None
    test_code: bool
    runner_config: bool


def is_markdown(path: str) -> bool:
    """Whether a path is Markdown, where a TODO is prose, never a postcondition hit."""
    return path.lower().endswith(_MARKDOWN)


def has_test_attribute(language: Language | None, text: str | None) -> bool:
    """Whether a Rust or JVM text declares tests inline (``#[cfg(test)]``, ``@Test``)."""
    if language is None or text is None or is_binary(text):
        return False
    pattern = SYNTAX[language].test_attribute
    return pattern is not None and any(pattern.search(line) for _, line in lines(text))


def classify(
    path: str, text: str | None = None, test_paths: tuple[str, ...] = (), other: str = ""
) -> Image:
    """Classify ``path`` (relative, ``/``-separated); ``text`` (and ``other``, the change's
    other side) lets a test attribute count: in either image, so a Rust file whose last
    ``#[test]`` was deleted is still test code.

    Test code needs a known language: a Markdown or data file under ``tests/`` is never
    scanned for test markers.
    """
    language = language_of(path)
    test_code = language is not None and (
        matches_any(path, TEST_PATTERNS)
        or matches_any(path, test_paths)
        or has_test_attribute(language, text)
        or has_test_attribute(language, other)
    )
    return Image(
        path=path,
        text=text or "",
        language=language,
        test_code=test_code,
        runner_config=matches_any(path, RUNNER_FILES) or path.rsplit("/", 1)[-1] in _SECTIONED,
    )


def runner_header(name: str, line: str) -> bool | None:
    """Whether ``line`` of the mixed file ``name`` opens one of the runner's sections
    (``[pytest]``, ``[tool:pytest]``, ``[tool.pytest...]`` in ``pyproject.toml``) or another
    one; None when it opens none. An INI header starts its line (an indented one continues a
    value, as pytest's parser reads it); a TOML header may be indented. Linear in the line:
    no regular expression."""
    toml = name == "pyproject.toml"
    head = line.lstrip() if toml else line
    end = head.find("]")
    if not head.startswith("[") or end < 0:
        return None
    inner = head[1:end]
    if toml:
        inner = inner.removeprefix("[")  # an array of tables: [[tool.pytest...]]
        return [p.strip().strip("\"'") for p in inner.split(".")][:2] == ["tool", "pytest"]
    return inner.strip() in ("pytest", "tool:pytest")


def runner_sections(path: str, text: str) -> list[tuple[int, str]]:
    """The lines of a runner configuration that configure the runner, numbered.

    ``pyproject.toml``, ``setup.cfg`` and ``tox.ini`` count inside their pytest sections
    only; every other runner file counts whole.
    """
    name = path.rsplit("/", 1)[-1]
    language = language_of(path)
    numbered: Iterable[tuple[int, str]] = lines(text, SYNTAX[language].breaks if language else "")
    if name in _INI:
        # Read as pytest reads it: a ``[pytest]`` after a form feed opens a section for
        # pytest, and must for the screen too (a hit keeps git's line number).
        numbered = ((n, piece) for n, line in numbered for piece in line.splitlines())
    if name not in _SECTIONED:
        return list(numbered)
    inside = False
    kept = []
    for number, line in numbered:
        header = runner_header(name, line)
        if header is not None:
            inside = header
        elif inside:
            kept.append((number, line))
    return kept


@final
@frozen(kw_only=True)
class Pair:
    """A change with its old image (None when added) and new image (None when deleted)."""

    change: FileChange
    old: Image | None
    new: Image | None


def _readable(text: str | None) -> str:
    return "" if text is None or is_binary(text) else text


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
            else classify(change.before, old_text, test_paths, new_text)
        )
        new = (
            None
            if change.status is ChangeStatus.DELETED
            else classify(change.path, new_text, test_paths, old_text)
        )
        built.append(Pair(change=change, old=old, new=new))
    return tuple(built)
