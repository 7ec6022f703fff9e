"""Path classes: test code per language, CI files, runner configuration (examples)."""

from __future__ import annotations

import pytest

from pipeline.core.screening import (
    ChangeStatus,
    FileChange,
    Language,
    ScreenKind,
    ScreenRules,
    classify,
    language_of,
    screen,
)


@pytest.mark.parametrize(
    "path",
    [
        "test_calc.py",
        "pkg/test_calc.py",
        "calc_test.py",
        "tests/helpers.py",
        "pkg/tests/helpers.py",
        "test/calc.js",
        "web/__tests__/calc.tsx",
        "calc.test.ts",
        "src/calc.spec.js",
        "calc_test.go",
        "src/main/CalcTest.java",
        "CalcTest.kt",
        "CalcTests.java",
        "src/test/kotlin/Calc.kt",
    ],
)
def test_built_in_test_paths_are_test_code(path: str) -> None:
    """Every built-in pattern of the design makes a source file test code."""
    assert classify(path).test_code


@pytest.mark.parametrize(
    "path",
    ["calc.py", "tests/README.md", "tests/data/fixture.json", "docs/testing.md", "contest.py"],
)
def test_docs_data_and_plain_code_are_not_test_code(path: str) -> None:
    """Markdown and data under ``tests/`` are never scanned for test markers, nor is code
    whose name only looks like a test's."""
    assert not classify(path).test_code


def test_an_inline_test_attribute_makes_rust_and_jvm_files_test_code() -> None:
    """Rust and Java/Kotlin keep tests beside the code: a test attribute makes the file test
    code wherever it lives; the same words in Python do not."""
    assert classify("src/lib.rs", "#[cfg(test)]\nmod tests {}\n").test_code
    assert classify("src/lib.rs", "#[test]\nfn t() {}\n").test_code
    assert not classify("src/lib.rs", "fn main() {}\n").test_code
    assert classify("src/main/Calc.java", "@Test\nvoid t() {}\n").test_code
    assert not classify("calc.py", "#[test]\n@Test\n").test_code


def test_extra_test_paths_extend_the_patterns() -> None:
    """``[tamper] test_paths`` globs are anchored at the root when they hold a ``/``."""
    assert classify("spec/calc.rb.py", test_paths=("spec/**",)).test_code
    assert not classify("app/spec/calc.py", test_paths=("spec/**",)).test_code


@pytest.mark.parametrize(
    "path",
    [
        ".github/workflows/ci.yml",
        ".gitlab-ci.yml",
        ".circleci/config.yml",
        "Jenkinsfile",
        "azure-pipelines.yml",
        ".buildkite/pipeline.yml",
        ".travis.yml",
        ".ci/run",
    ],
)
def test_ci_files(path: str) -> None:
    """Each CI location of the design is a CI file at the workspace root: adding one is a
    ``protected_changed`` hit naming it so."""
    assert _protected(path) == ["added (a CI file)"]


def test_ci_patterns_are_anchored_at_the_root() -> None:
    """A vendored project's CI file is not the workspace's."""
    assert _protected("vendor/lib/.travis.yml") == []
    assert _protected("vendor/.github/workflows/ci.yml") == []


def _protected(path: str) -> list[str]:
    """The details of the ``protected_changed`` hits of adding ``path``."""
    change = FileChange(
        path=path, old_path=None, status=ChangeStatus.ADDED, old_text=None, new_text="x"
    )
    hits = screen([change], ScreenRules())
    return [hit.detail for hit in hits if hit.kind is ScreenKind.PROTECTED_CHANGED]


@pytest.mark.parametrize(
    "path",
    [
        "pytest.ini",
        "tox.ini",
        "setup.cfg",
        "pyproject.toml",
        "conftest.py",
        "tests/conftest.py",
        "jest.config.js",
        "vitest.config.ts",
        ".mocharc.yml",
    ],
)
def test_runner_configuration(path: str) -> None:
    """Each test runner's configuration file of the design is classified as such."""
    assert classify(path).runner_config


@pytest.mark.parametrize(
    ("path", "language"),
    [
        ("a.py", Language.PYTHON),
        ("a.tsx", Language.JAVASCRIPT),
        ("a.mjs", Language.JAVASCRIPT),
        ("a.go", Language.GO),
        ("a.rs", Language.RUST),
        ("A.kt", Language.JVM),
        ("A.java", Language.JVM),
        ("README.md", None),
        (".py", None),
        ("Makefile", None),
    ],
)
def test_language_by_extension(path: str, language: Language | None) -> None:
    """The extension names the language; a dot-file has none."""
    assert language_of(path) is language
