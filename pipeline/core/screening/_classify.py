"""Which paths are test code, CI files, test-runner configuration or Markdown (pure).

A path is classified by its name and, for Rust and Java/Kotlin, where tests live beside the
code, by whether its text has a test attribute.
"""

from __future__ import annotations

from typing import Final, final

from attrs import frozen

from pipeline.core.screening._glob import matches_any
from pipeline.core.screening._languages import SYNTAX, language_of
from pipeline.core.screening._lines import MAX_LINE_CHARS, is_binary, lines
from pipeline.core.screening._model import Language

__all__ = [
    "CI_PATTERNS",
    "RUN_CONFIGURATION",
    "TEST_PATTERNS",
    "FileClass",
    "classify",
    "has_test_attribute",
    "is_markdown",
    "runner_sections",
]

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

_RUNNER_FILES: Final = (
    "pytest.ini",
    "tox.ini",
    "setup.cfg",
    "pyproject.toml",
    "conftest.py",
    "jest.config.*",
    "vitest.config.*",
    ".mocharc*",
)

# In these files only the named sections configure the runner; elsewhere they hold other
# tools' settings, whose `exclude` lines are none of the screen's business.
_SECTIONS: Final = {
    "tox.ini": ("[pytest]",),
    "setup.cfg": ("[tool:pytest]",),
    "pyproject.toml": ("[tool.pytest",),
}

_MARKDOWN: Final = (".md", ".markdown", ".mdx")


@final
@frozen(kw_only=True)
class FileClass:
    """What the screen makes of one path (and text)."""

    language: Language | None
    test_code: bool
    runner_config: bool
    ci: bool


def is_markdown(path: str) -> bool:
    """Whether a path is Markdown, where a TODO is prose, never a postcondition hit."""
    return path.lower().endswith(_MARKDOWN)


def has_test_attribute(language: Language | None, text: str | None) -> bool:
    """Whether a Rust or JVM text declares tests inline (``#[cfg(test)]``, ``@Test``)."""
    if language is None or text is None or is_binary(text):
        return False
    pattern = SYNTAX[language].test_attribute
    return pattern is not None and any(pattern.search(line) for _, line in lines(text))


def classify(path: str, text: str | None = None, test_paths: tuple[str, ...] = ()) -> FileClass:
    """Classify ``path`` (relative, ``/``-separated); ``text`` lets a test attribute count.

    Test code needs a known language: a Markdown or data file under ``tests/`` is never
    scanned for test markers.
    """
    language = language_of(path)
    test_code = language is not None and (
        matches_any(path, TEST_PATTERNS)
        or matches_any(path, test_paths)
        or has_test_attribute(language, text)
    )
    return FileClass(
        language=language,
        test_code=test_code,
        runner_config=matches_any(path, _RUNNER_FILES),
        ci=matches_any(path, CI_PATTERNS),
    )


def runner_sections(path: str, text: str) -> list[tuple[int, str]]:
    """The lines of a runner configuration that configure the runner, numbered.

    ``pyproject.toml``, ``setup.cfg`` and ``tox.ini`` count inside their pytest sections
    only; every other runner file counts whole.
    """
    name = path.rsplit("/", 1)[-1]
    headers = _SECTIONS.get(name)
    if headers is None:
        return list(lines(text))
    inside = False
    kept = []
    for number, line in lines(text):
        stripped = line.strip()
        if stripped.startswith("[") and len(stripped) < MAX_LINE_CHARS:
            inside = stripped.startswith(headers)
        elif inside:
            kept.append((number, line))
    return kept
