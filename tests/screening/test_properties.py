"""Laws of the screen over generated test files in every language: a move, rename or reorder
gives no hit; each way of losing a test is caught and named with its path; the screen is
total, deterministic and blind to the order of the changes."""

from __future__ import annotations

from hypothesis import assume, given
from hypothesis import strategies as st

from pipeline.core.screening import (
    MAX_LINE_CHARS,
    ChangeStatus,
    FileChange,
    Language,
    ScreenKind,
    ScreenRules,
    screen,
)
from pipeline.core.screening._lines import strip_comment, unquoted
from tests.screening.sources import SKIP_FORMS, Case, Project, changes, path_for

RULES = ScreenRules(todo_markers=("TODO", "FIXME"))
_NAMES = st.text("abcdefghij", min_size=1, max_size=6)


@st.composite
def projects(draw: st.DrawFn) -> Project:
    """One to three test files in one language, every test uniquely named, at least one
    assertion each (a test with none is a test a removal could not show)."""
    language = draw(st.sampled_from(list(Language)))
    names = draw(st.lists(_NAMES, min_size=1, max_size=9, unique=True))
    stems = draw(st.lists(_NAMES, min_size=1, max_size=3, unique=True))
    project = Project(language)
    for index, stem in enumerate(stems):
        mine = names[index :: len(stems)]
        cases = tuple(
            Case(n, draw(st.integers(1, 3)), draw(st.sampled_from([None, *SKIP_FORMS[language]])))
            for n in mine
        )
        project = project.with_file(path_for(language, stem), cases)
    return project


def _files_with_tests(project: Project) -> list[str]:
    return sorted(p for p, cases in project.files.items() if cases)


def _stems(project: Project) -> set[str]:
    return set(project.files)


@given(projects(), st.data())
def test_renaming_a_test_keeping_its_body_gives_no_hit(
    project: Project, data: st.DataObject
) -> None:
    """A new name for a test, its assertions and markers kept, changes no count."""
    path = data.draw(st.sampled_from(_files_with_tests(project)))
    cases = project.files[path]
    index = data.draw(st.integers(0, len(cases) - 1))
    taken = {c.name for cs in project.files.values() for c in cs}
    new_name = data.draw(_NAMES.filter(lambda n: n not in taken))
    renamed = (
        *cases[:index],
        Case(new_name, cases[index].assertions, cases[index].skip),
        *cases[index + 1 :],
    )
    assert screen(changes(project, project.with_file(path, renamed)), RULES) == ()


@given(projects(), st.data())
def test_moving_or_reordering_tests_gives_no_hit(project: Project, data: st.DataObject) -> None:
    """A test moved to another file (new or existing), or the tests of a file reordered,
    leaves every count as it was."""
    source = data.draw(st.sampled_from(_files_with_tests(project)))
    cases = project.files[source]
    index = data.draw(st.integers(0, len(cases) - 1))
    moved = cases[index]
    rest = cases[:index] + cases[index + 1 :]
    stem = data.draw(_NAMES)
    target = data.draw(st.sampled_from(sorted({*project.files, path_for(project.language, stem)})))
    after = project.with_file(source, rest)
    after = after.with_file(target, (*after.files.get(target, ()), moved))
    if target == source:
        after = after.with_file(source, tuple(data.draw(st.permutations(cases))))
    assert screen(changes(project, after), RULES) == ()


@given(projects(), st.data(), st.booleans())
def test_moving_a_test_file_gives_no_hit(
    project: Project, data: st.DataObject, as_rename: bool
) -> None:
    """A test file moved to another test path, reported as a rename or as a deletion and an
    addition, loses nothing."""
    source = data.draw(st.sampled_from(sorted(project.files)))
    target = path_for(project.language, data.draw(_NAMES))
    assume(target not in project.files)
    after = project.without(source).with_file(target, project.files[source])
    renamed = {target: source} if as_rename else None
    assert screen(changes(project, after, renamed), RULES) == ()


@given(projects(), st.data())
def test_deleting_a_test_file_is_named(project: Project, data: st.DataObject) -> None:
    """``test_file_deleted`` names the deleted file."""
    path = data.draw(st.sampled_from(_files_with_tests(project)))
    hits = screen(changes(project, project.without(path)), RULES)
    assert (ScreenKind.TEST_FILE_DELETED, path) in {(h.kind, h.path) for h in hits}
    assert {h.path for h in hits} == {path}


@given(projects(), st.data())
def test_emptying_a_test_file_is_named(project: Project, data: st.DataObject) -> None:
    """``test_file_emptied`` names the file whose tests are all gone."""
    path = data.draw(st.sampled_from(_files_with_tests(project)))
    hits = screen(changes(project, project.with_file(path, ())), RULES)
    assert [(h.kind, h.path) for h in hits] == [(ScreenKind.TEST_FILE_EMPTIED, path)]


@given(projects(), st.data())
def test_deleting_a_test_is_named(project: Project, data: st.DataObject) -> None:
    """Deleting one test gives ``test_removed`` (or ``test_file_emptied`` for a file's last
    test) at its file, and every assertion it took is counted."""
    path = data.draw(st.sampled_from(_files_with_tests(project)))
    cases = project.files[path]
    index = data.draw(st.integers(0, len(cases) - 1))
    rest = cases[:index] + cases[index + 1 :]
    hits = screen(changes(project, project.with_file(path, rest)), RULES)
    kinds = {(h.kind, h.path) for h in hits}
    expected = ScreenKind.TEST_REMOVED if rest else ScreenKind.TEST_FILE_EMPTIED
    assert (expected, path) in kinds
    assert {h.path for h in hits} == {path}
    assert {h.kind for h in hits} <= {expected, ScreenKind.ASSERTIONS_REMOVED}


@given(projects(), st.data())
def test_adding_a_skip_is_named_at_its_line(project: Project, data: st.DataObject) -> None:
    """A skip added, in any listed syntax, to a test that had none is ``skip_added`` at the
    file and the marker's line."""
    unskipped = [(p, i) for p, cs in project.files.items() for i, c in enumerate(cs) if not c.skip]
    assume(unskipped)
    path, index = data.draw(st.sampled_from(sorted(unskipped)))
    form = data.draw(st.sampled_from(SKIP_FORMS[project.language]))
    cases = list(project.files[path])
    cases[index] = Case(cases[index].name, cases[index].assertions, form)
    change = changes(project, project.with_file(path, tuple(cases)))
    hits = screen(change, RULES)
    assert [(h.kind, h.path) for h in hits] == [(ScreenKind.SKIP_ADDED, path)]
    new_lines = (change[0].new_text or "").split("\n")
    assert new_lines[hits[0].line - 1].strip() == hits[0].detail


@given(projects(), st.data())
def test_removing_an_assertion_is_named(project: Project, data: st.DataObject) -> None:
    """One assertion fewer in one test is ``assertions_removed`` at its file."""
    path = data.draw(st.sampled_from(_files_with_tests(project)))
    cases = list(project.files[path])
    index = data.draw(st.integers(0, len(cases) - 1))
    case = cases[index]
    cases[index] = Case(case.name, case.assertions - 1, case.skip)
    hits = screen(changes(project, project.with_file(path, tuple(cases))), RULES)
    assert [(h.kind, h.path) for h in hits] == [(ScreenKind.ASSERTIONS_REMOVED, path)]


_PATHS = st.sampled_from(
    [
        "tests/test_a.py",
        "src/a.test.ts",
        "a_test.go",
        "src/lib.rs",
        "src/test/java/ATest.java",
        "conftest.py",
        "pyproject.toml",
        "ralph.toml",
        ".github/workflows/ci.yml",
        "README.md",
        "app.py",
    ]
)
_TEXTS = st.one_of(
    st.none(),
    st.text(),
    st.binary().map(lambda b: b.decode("latin-1")),
    st.sampled_from(["def test_x():\n    assert 1\n", "#[test]\nfn x() { assert!(true); }\n"]),
    st.integers(1, 3).map(lambda n: "x" * (MAX_LINE_CHARS * n) + "\n# TODO\n"),
)
_CHANGES = st.builds(
    FileChange,
    path=_PATHS,
    old_path=st.one_of(st.none(), _PATHS),
    status=st.sampled_from(list(ChangeStatus)),
    old_text=_TEXTS,
    new_text=_TEXTS,
)


@given(st.lists(_CHANGES, max_size=6), st.randoms(use_true_random=False))
def test_the_screen_is_total_deterministic_and_order_blind(
    found: list[FileChange], random: st.SearchStrategy[object]
) -> None:
    """Any change set, binary-looking texts and over-long lines included, screens without
    raising, to the same hits whatever order the changes come in."""
    hits = screen(found, RULES)
    shuffled = list(found)
    random.shuffle(shuffled)  # type: ignore[attr-defined]
    assert screen(shuffled, RULES) == hits
    assert screen(tuple(found), RULES) == hits


def test_a_huge_line_is_read_only_up_to_the_bound() -> None:
    """A marker past :data:`MAX_LINE_CHARS` on one line is not read: the work is bounded."""
    line = "x" * MAX_LINE_CHARS + "  # TODO"
    change = FileChange(
        path="app.py",
        old_path=None,
        status=ChangeStatus.ADDED,
        old_text=None,
        new_text=line * 1 + "\n# TODO\n",
    )
    assert [h.line for h in screen([change], RULES)] == [2]


@given(st.text("ab#/'\"`\\ ", max_size=30), st.sampled_from(["#", "//", "--"]))
def test_a_comment_is_cut_where_a_walk_of_the_quotes_cuts_it(line: str, marker: str) -> None:
    """``strip_comment``'s shortcut (no quote before the marker) cuts where the walk through
    the quotes does, on any line."""
    walked = next((line[:i] for i in unquoted(line) if line.startswith(marker, i)), line)
    assert strip_comment(line, marker) == walked
