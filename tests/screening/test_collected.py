"""The collection check's pure half: which gates run pytest, how the plugin's output is read
(and refused when cut short or forged), and how two collections compare: a test is known by
its id less its file, lost when it no longer runs, and a failed collection is said as such."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pipeline.screening import (
    Collected,
    CollectedTest,
    Runner,
    ScreenKind,
    collection_argv,
    lost_by_collection,
    parse_listed,
    parse_pytest,
    runner_of,
)


@pytest.mark.parametrize(
    ("argv", "runner"),
    [
        (("pytest", "-q"), Runner.PYTEST),
        (("/venv/bin/pytest",), Runner.PYTEST),
        (("python3", "-m", "pytest", "tests"), Runner.PYTEST),
        (("uv", "run", "pytest", "-x"), Runner.PYTEST),
        (("py.test",), Runner.PYTEST),
        (("sh", "-c", "pytest -q"), None),
        (("make", "test"), None),
        (("npm", "test"), None),
        (("python", "-m", "unittest"), None),
        ((), None),
    ],
)
def test_which_gates_run_pytest(argv: tuple[str, ...], runner: Runner | None) -> None:
    """pytest as the program, a module (``-m pytest``) or a tool's argument; never read out
    of a shell command line."""
    assert runner_of(argv) is runner


def test_the_collection_command_is_the_gate_s_own_plus_the_plugin() -> None:
    """The gate's argv, collecting only, with ralph's plugin and no cache written."""
    assert collection_argv(("pytest", "tests")) == (
        "pytest",
        "tests",
        "--collect-only",
        "-q",
        "-p",
        "ralph_collect",
        "-p",
        "no:cacheprovider",
    )


def test_the_plugin_s_records_are_read_and_other_lines_ignored() -> None:
    """Only lines with the token count: pytest's own list, and a line the code under test
    prints without the token, are not tests."""
    output = (
        "tests/test_a.py::test_x\n"
        'forged {"id": "tests/test_a.py::test_y", "skip": null}\n'
        'tok {"id": "tests/test_a.py::test_x", "skip": null}\n'
        'tok {"id": "tests/test_a.py::test_z", "skip": "xfail"}\n'
        "tok END 2\n"
        "2 tests collected in 0.01s\n"
    )
    assert parse_pytest(output, "tok") == Collected(
        tests=(
            CollectedTest(id="tests/test_a.py::test_x"),
            CollectedTest(id="tests/test_a.py::test_z", skipped="xfail"),
        )
    )


@pytest.mark.parametrize(
    ("output", "failure"),
    [
        ('tok {"id": "a::b", "skip": null}\n', "the plugin's list never ended"),
        ('tok {"id": "a::b", "skip": null}\ntok END 3\n', "the plugin counted 3, wrote 1"),
        ("tok {not json\ntok END 1\n", "the plugin wrote a line that is not JSON"),
        ('tok {"skip": null}\ntok END 1\n', "the plugin wrote a record without an id"),
    ],
)
def test_a_cut_short_or_broken_list_is_a_failure(output: str, failure: str) -> None:
    """No end line, a count that disagrees, a record that is not one: a failure, never a
    partial list taken for the whole."""
    found = parse_pytest(output, "tok")
    assert found.tests == ()
    assert found.failure is not None
    assert found.failure.startswith(failure)


def test_a_command_s_ids_are_its_lines() -> None:
    """``collect`` prints one id a line; blank lines are nothing."""
    assert parse_listed("a::b\n\n  c  \n") == Collected(
        tests=(CollectedTest(id="a::b"), CollectedTest(id="c"))
    )


def _ran(*ids: str) -> Collected:
    return Collected(tests=tuple(CollectedTest(id=i) for i in ids))


def test_a_test_moved_to_another_file_is_the_same_test() -> None:
    """Known by its id less its file: ``a.py::T::t`` and ``b.py::T::t`` are one test."""
    assert (
        lost_by_collection("g", _ran("a.py::T::t", "a.py::u"), _ran("b.py::T::t", "c.py::u")) == ()
    )


def test_a_test_gone_or_skipped_is_lost_one_hit_per_file_and_way() -> None:
    """Gone from the collection, or collected marked skip: each named with its base id."""
    base = _ran("a.py::t1", "a.py::t2", "b.py::t3", "b.py::t4")
    now = Collected(
        tests=(CollectedTest(id="a.py::t1"), CollectedTest(id="b.py::t3", skipped="skip"))
    )
    hits = lost_by_collection("tests", base, now)
    assert [(h.kind, h.path, h.detail) for h in hits] == [
        (ScreenKind.TEST_LOST, "a.py", "gate 'tests': 1 test no longer collected: a.py::t2"),
        (ScreenKind.TEST_LOST, "b.py", "gate 'tests': 1 test collected but marked skip: b.py::t3"),
        (ScreenKind.TEST_LOST, "b.py", "gate 'tests': 1 test no longer collected: b.py::t4"),
    ]


def test_a_test_the_base_skipped_already_is_not_lost() -> None:
    """What did not run on the base is no loss when it does not run now."""
    base = Collected(tests=(CollectedTest(id="a.py::t", skipped="skip"),))
    assert lost_by_collection("g", base, _ran()) == ()


def test_a_parametrised_test_counts_each_case() -> None:
    """``t[1]`` and ``t[2]`` are two tests; one case gone is one lost."""
    hits = lost_by_collection("g", _ran("a.py::t[1]", "a.py::t[2]"), _ran("a.py::t[1]"))
    assert [h.detail for h in hits] == ["gate 'g': 1 test no longer collected: a.py::t[2]"]


def test_a_failed_collection_is_said_as_such() -> None:
    """The tree's failure is one ``collection_failed`` hit; the base's compares nothing and
    only warns (``screen_incomplete``): the base is the person's."""
    failed = Collected(failure="exit 2: 1 error")
    (tree,) = lost_by_collection("g", _ran("a.py::t"), failed)
    assert (tree.kind, tree.detail) == (
        ScreenKind.COLLECTION_FAILED,
        "gate 'g': collecting the tests failed (exit 2: 1 error)",
    )
    (base,) = lost_by_collection("g", failed, _ran())
    assert base.kind is ScreenKind.SCREEN_INCOMPLETE


def test_allowed_paths_lose_nothing() -> None:
    """``[tamper] allow`` covers lost tests too."""
    assert lost_by_collection("g", _ran("legacy/a.py::t"), _ran(), ("legacy/**",)) == ()


@given(st.text(), st.text(max_size=4))
def test_reading_any_output_never_raises(output: str, token: str) -> None:
    """Law: whatever a collection printed, reading it gives a list or a failure."""
    found = parse_pytest(output, token)
    assert (found.failure is None) or found.tests == ()
    parse_listed(output)
