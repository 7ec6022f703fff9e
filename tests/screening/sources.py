"""Small test files in each language, rendered from a plain model, and the change between
two projects: the material of the detector examples and the hypothesis properties."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace

from pipeline.core.screening import ChangeStatus, FileChange, Language


@dataclass(frozen=True)
class Case:
    """One test: its base name, how many assertions it makes and its skip marker (if any)."""

    name: str
    assertions: int = 1
    skip: str | None = None


@dataclass(frozen=True)
class Project:
    """Test files by path, each a tuple of tests, in one language."""

    language: Language
    files: Mapping[str, tuple[Case, ...]] = field(default_factory=dict)

    def with_file(self, path: str, cases: tuple[Case, ...]) -> Project:
        return replace(self, files={**self.files, path: cases})

    def without(self, path: str) -> Project:
        return replace(self, files={p: c for p, c in self.files.items() if p != path})


SKIP_FORMS: Mapping[Language, tuple[str, ...]] = {
    Language.PYTHON: (
        '@pytest.mark.skip(reason="flaky")',
        "@pytest.mark.skipif(True, reason='x')",
        "@pytest.mark.xfail",
        "@unittest.skip('later')",
        "@unittest.expectedFailure",
        "    pytest.skip('later')",
        "    self.skipTest('later')",
    ),
    Language.JAVASCRIPT: ("it.skip", "it.only", "xit", "fit", "test.skip", "xtest", "this.skip();"),
    Language.GO: ('\tt.Skip("later")', '\tt.Skipf("later %d", 1)', "\tt.SkipNow()"),
    Language.RUST: ("#[ignore]", '#[ignore = "slow"]'),
    Language.JVM: ("@Disabled", "@Ignore", "@DisabledOnOs(OS.WINDOWS)"),
}
"""Every skip syntax the generated files use, per language."""

_IN_BODY = ("    pytest.skip('later')", "    self.skipTest('later')", "this.skip();")


def reported_name(language: Language, base: str) -> str:
    """The name the counters report for a case called ``base``."""
    match language:
        case Language.PYTHON:
            return f"test_{base}"
        case Language.GO:
            return f"Test{base.capitalize()}"
        case _:
            return f"t_{base}"


def _python(case: Case) -> list[str]:
    out = [case.skip] if case.skip and case.skip not in _IN_BODY else []
    out.append(f"def {reported_name(Language.PYTHON, case.name)}():")
    if case.skip in _IN_BODY:
        out.append(case.skip)
    out += [f"    assert check({i}) == {i}" for i in range(case.assertions)] or ["    run()"]
    return [*out, ""]


def _javascript(case: Case) -> list[str]:
    call = case.skip if case.skip and not case.skip.endswith(";") else "it"
    out = [f"{call}('{reported_name(Language.JAVASCRIPT, case.name)}', function () {{"]
    if case.skip == "this.skip();":
        out.append("  this.skip();")
    out += [f"  expect(check({i})).toBe({i});" for i in range(case.assertions)]
    return [*out, "});", ""]


def _go(case: Case) -> list[str]:
    out = [f"func {reported_name(Language.GO, case.name)}(t *testing.T) {{"]
    if case.skip:
        out.append(case.skip)
    out += [f'\tif check({i}) != {i} {{ t.Errorf("bad") }}' for i in range(case.assertions)]
    return [*out, "}", ""]


def _rust(case: Case) -> list[str]:
    out = ["#[test]", *([case.skip] if case.skip else [])]
    out.append(f"fn {reported_name(Language.RUST, case.name)}() {{")
    out += [f"    assert_eq!(check({i}), {i});" for i in range(case.assertions)]
    return [*out, "}", ""]


def _jvm(case: Case) -> list[str]:
    out = [*([f"    {case.skip}"] if case.skip else []), "    @Test"]
    out.append(f"    void {reported_name(Language.JVM, case.name)}() {{")
    out += [f"        assertEquals({i}, check({i}));" for i in range(case.assertions)]
    return [*out, "    }", ""]


_RENDER = {
    Language.PYTHON: (_python, "import pytest\nimport unittest\n\n", ""),
    Language.JAVASCRIPT: (_javascript, "const { check } = require('./calc');\n\n", ""),
    Language.GO: (_go, 'package calc\n\nimport "testing"\n\n', ""),
    Language.RUST: (_rust, "use calc::check;\n\n", ""),
    Language.JVM: (_jvm, "class CalcTest {\n", "}\n"),
}


def render(language: Language, cases: tuple[Case, ...]) -> str:
    """A test file declaring ``cases`` in order."""
    one, head, tail = _RENDER[language]
    return head + "\n".join(line for case in cases for line in one(case)) + tail


def path_for(language: Language, stem: str) -> str:
    """A test file's path, by a built-in pattern of that language."""
    match language:
        case Language.PYTHON:
            return f"tests/test_{stem}.py"
        case Language.JAVASCRIPT:
            return f"src/{stem}.test.js"
        case Language.GO:
            return f"{stem}_test.go"
        case Language.RUST:
            return f"tests/{stem}.rs"
        case Language.JVM:
            return f"src/test/java/{stem.capitalize()}Test.java"


def changes(
    before: Project, after: Project, renamed: Mapping[str, str] | None = None
) -> list[FileChange]:
    """The change from ``before`` to ``after``; ``renamed`` maps new paths to old ones."""
    renamed = dict(renamed or {})
    sources = set(renamed.values())
    old = {p: render(before.language, c) for p, c in before.files.items()}
    new = {p: render(after.language, c) for p, c in after.files.items()}
    found = []
    for path in sorted(old.keys() | new.keys()):
        if path in renamed:
            source = renamed[path]
            found.append(
                FileChange(
                    path=path,
                    old_path=source,
                    status=ChangeStatus.RENAMED,
                    old_text=old[source],
                    new_text=new[path],
                )
            )
        elif path in sources and path not in new:
            continue
        elif path not in new:
            found.append(
                FileChange(
                    path=path,
                    old_path=None,
                    status=ChangeStatus.DELETED,
                    old_text=old[path],
                    new_text=None,
                )
            )
        elif path not in old:
            found.append(
                FileChange(
                    path=path,
                    old_path=None,
                    status=ChangeStatus.ADDED,
                    old_text=None,
                    new_text=new[path],
                )
            )
        elif old[path] != new[path]:
            found.append(
                FileChange(
                    path=path,
                    old_path=None,
                    status=ChangeStatus.MODIFIED,
                    old_text=old[path],
                    new_text=new[path],
                )
            )
    return found
