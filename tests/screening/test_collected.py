"""The collection check's pure half: which gates run pytest, jest, vitest, ``go test`` or
``cargo test``, the commands that collect their tests, how the plugin's (and each runner's)
output is read (and refused when cut short or forged), and how two collections compare: a test
is known by its id less its file, lost when it no longer runs, and a failed collection is said
as such."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pipeline.core.screening import (
    Collected,
    CollectedTest,
    Runner,
    ScreenKind,
    collection_steps,
    lost_by_collection,
    npm_test_args,
    package_test_command,
    parse_cargo,
    parse_go,
    parse_listed,
    parse_pytest,
    parse_vitest,
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
        (("jest", "--ci"), Runner.JEST),
        (("/w/node_modules/.bin/jest",), Runner.JEST),
        (("npx", "--yes", "jest", "tests"), Runner.JEST),
        (("node", "node_modules/jest/bin/jest.js"), Runner.JEST),
        (("pnpm", "exec", "vitest", "run"), Runner.VITEST),
        (("vitest", "run"), Runner.VITEST),
        (("npx", "vitest", "--run"), Runner.VITEST),
        (("go", "test", "./..."), Runner.GO),
        (("go", "vet", "./..."), None),
        (("cargo", "test"), Runner.CARGO),
        (("cargo", "+nightly", "test", "--", "--nocapture"), Runner.CARGO),
        (("cargo", "build"), None),
        (("npm", "run", "jest"), None),
        (("sh", "-c", "npx jest"), None),
        (("node", "server.js"), None),
    ],
)
def test_which_gates_run_a_known_runner(argv: tuple[str, ...], runner: Runner | None) -> None:
    """pytest as the program, a module (``-m pytest``) or a tool's argument; jest and vitest
    as the program or through a launcher; ``go test``, ``cargo test``; never read out of a
    shell command line, ``npm`` or ``make``."""
    assert runner_of(argv) is runner


def test_the_collection_command_is_the_gate_s_own_plus_the_plugin() -> None:
    """The gate's argv, collecting only, with ralph's plugin and no cache written."""
    assert collection_steps(Runner.PYTEST, ("pytest", "tests")) == (
        (
            "pytest",
            "tests",
            "--collect-only",
            "-q",
            "-p",
            "ralph_collect",
            "-p",
            "no:cacheprovider",
        ),
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
    for found in (
        parse_pytest(output, token),
        parse_vitest(output, token),
        parse_go(output),
        parse_cargo(output, output),
    ):
        assert (found.failure is None) or found.tests == ()
    parse_listed(output)


@given(st.lists(st.sampled_from(["[", "]", "[]", "{", "}", '{"name": "a", "file": "/w/b"}', ","])))
def test_reading_any_vitest_like_output_never_raises(parts: list[str]) -> None:
    """Law: bracket lines in any order (a list cut short, nested, empty) give a list or a
    failure, never an exception."""
    found = parse_vitest("\n".join(parts), "/w")
    assert (found.failure is None) or found.tests == ()


def test_each_runner_collects_with_the_gate_s_own_command_and_runs_no_test() -> None:
    """jest gets ralph's reporter and a name pattern no test matches; vitest's ``run`` becomes
    ``list --json``; ``go test`` gets ``-list .* -json``; ``cargo test`` lists its tests, then
    its ignored ones (not when the gate runs those too)."""
    assert collection_steps(Runner.JEST, ("npx", "jest", "-i"), "/r.cjs") == (
        (
            "npx", "jest", "-i", "--ci", "--passWithNoTests", "--coverage=false",
            "--no-watchman", "--reporters=/r.cjs", "--testNamePattern=(?!)",
        ),
    )  # fmt: skip
    assert collection_steps(Runner.VITEST, ("npx", "vitest", "run", "--coverage", "src")) == (
        ("npx", "vitest", "list", "src", "--json"),
    )
    assert collection_steps(Runner.VITEST, ("vitest", "--run")) == (("vitest", "list", "--json"),)
    assert collection_steps(Runner.GO, ("go", "test", "-race", "./...")) == (
        ("go", "test", "-list", ".*", "-json", "-race", "./..."),
    )
    listed = ("cargo", "test", "--", "--nocapture", "--list", "--format", "terse")
    assert collection_steps(Runner.CARGO, ("cargo", "test", "--", "--nocapture")) == (
        listed,
        (*listed, "--ignored"),
    )
    assert collection_steps(Runner.CARGO, ("cargo", "test", "--", "--include-ignored")) == (
        ("cargo", "test", "--", "--include-ignored", "--list", "--format", "terse"),
    )


def test_vitest_s_list_is_read_out_of_its_output_with_files_made_relative() -> None:
    """The JSON list vitest prints (its last), among other lines; no list is a failure."""
    output = 'noise\n[\n  {\n    "name": "add > adds",\n    "file": "/w/src/calc.test.js"\n  }\n]\n'
    assert parse_vitest(output, "/w") == Collected(
        tests=(CollectedTest(id="src/calc.test.js::add > adds"),)
    )
    assert parse_vitest("[]\n", "/w") == Collected(tests=())
    assert parse_vitest("Error: no\n", "/w").failure == "vitest printed no list of tests"
    assert parse_vitest('[\n{"name": 1}\n]\n', "/w").failure is not None


def test_go_s_listing_is_read_by_package_and_name() -> None:
    """Tests, fuzz targets and examples count, benchmarks and go's summary lines do not."""
    events = [
        {"Action": "output", "Package": "ex/calc", "Output": name + "\n"}
        for name in ("TestAdd", "FuzzAdd", "ExampleAdd", "BenchmarkAdd", "ok  \tex/calc\t0.1s")
    ]
    output = "go: downloading x\n" + "\n".join(json.dumps(e) for e in events) + "\n"
    assert [t.id for t in parse_go(output).tests] == [
        "ex/calc::TestAdd",
        "ex/calc::FuzzAdd",
        "ex/calc::ExampleAdd",
    ]


def test_cargo_s_listing_names_targets_marks_ignored_tests_and_drops_doc_lines() -> None:
    """Each test under the target cargo was running; a doc test's line is not part of its
    id (an edit above it moves it); a test the ``--ignored`` listing names is ``ignore``."""
    listed = (
        "     Running unittests src/lib.rs (target/debug/deps/calc-1)\n"
        "tests::adds: test\ntests::later: test\n"
        "     Running tests/calc.rs (target/debug/deps/calc-2)\nzero: test\n"
        "   Doc-tests calc\nsrc/lib.rs - add (line 1): test\n"
    )
    ignored = "     Running unittests src/lib.rs (target/debug/deps/calc-1)\ntests::later: test\n"
    assert parse_cargo(listed, ignored).tests == (
        CollectedTest(id="src/lib.rs::tests::adds"),
        CollectedTest(id="src/lib.rs::tests::later", skipped="ignore"),
        CollectedTest(id="tests/calc.rs::zero"),
        CollectedTest(id="doc-tests calc::src/lib.rs - add"),
    )
    was = parse_cargo(listed, None)
    hits = lost_by_collection("tests", was, parse_cargo(listed, ignored))
    assert [h.detail for h in hits] == [
        "gate 'tests': 1 test collected but marked ignore: src/lib.rs::tests::later"
    ]


@pytest.mark.parametrize(
    ("argv", "args"),
    [
        (("npm", "test"), ()),
        (("npm", "t", "--silent"), ()),
        (("/usr/bin/npm", "run", "test", "--", "-i"), ("-i",)),
        (("npm", "run", "build"), None),
        (("npm", "test", "extra"), None),
        (("make", "test"), None),
    ],
)
def test_which_gates_run_the_package_s_test_script(
    argv: tuple[str, ...], args: tuple[str, ...] | None
) -> None:
    """``npm test`` and its spellings, with what they pass on to the script after ``--``."""
    assert npm_test_args(argv) == args


@pytest.mark.parametrize(
    ("script", "command"),
    [
        ("jest", ("npx", "--no", "--", "jest", "-i")),
        ("vitest run --bail=1", ("npx", "--no", "--", "vitest", "run", "--bail=1", "-i")),
        ("npx jest --ci", ("npx", "jest", "--ci", "-i")),
        ("jest && eslint .", None),
        ("NODE_ENV=test jest", None),
        ("jest 'tests/'", None),
        ("jest $ARGS", None),
        ("mocha", None),
        ("node --test", None),
        ("", None),
    ],
)  # fmt: skip
def test_a_test_script_is_collected_only_when_it_is_one_plain_runner_command(
    script: str, command: tuple[str, ...] | None
) -> None:
    """The runner of ``npm test`` is known for sure only when its script is one jest or vitest
    command without shell syntax; it then runs from the project's own ``node_modules``."""
    assert package_test_command(script, ("-i",)) == command
