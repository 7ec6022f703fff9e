"""The screen's work is bounded: adversarial megabyte texts, built to make a backtracking
pattern go quadratic, each screen in well under the time a gate round allows.

The first trial found one: the JVM declaration pattern took 28 s on a megabyte of
``@Test`` followed by a 4,000-letter word, until its name group was anchored at a word start.
"""

from __future__ import annotations

import time

import pytest

from pipeline.core.screening import ChangeStatus, FileChange, ScreenRules, screen

_WORD = "a" * 4000
_CASES = [
    ("src/ATest.java", "@Test " + _WORD),
    ("src/ATest.java", "@Test\n" + _WORD),
    ("src/lib.rs", "#[test] " + _WORD),
    ("tests/test_a.py", "def test_" + _WORD),
    ("tests/a.test.js", "it('" + _WORD),
    ("tests/a.test.js", "it('" + "\\" * 4000),
    ("a_test.go", _WORD + ".Skip"),
    ("conftest.py", " -k" * 1300),
    ("tests/test_a.py", "x = '" * 800 + "#"),
    ("calc.py", "import" + " " * 4000 + "!"),
    ("tests/test_a.py", "import a\na" + ".b" * 2000 + " !"),
    ("tests/test_a.py", "from a import (\n" + "b, " * 1300),
    ("tests/test_a.py", "assert " + " == " * 1000),
    ("tests/test_a.py", "assert " + "(" * 4000),
    ("tests/test_a.py", "self.assertEqual(" + "x, " * 1300),
    ("tests/a.test.js", "expect(" * 580),
    ("tests/a.test.js", "expect(a" + ") ." * 1000),
    ("src/calc.js", "NODE_ENV" + " " * 4000 + "!"),
    ("calc.py", "'pytest'" + " " * 4000 + "in"),
    ("pytest.ini", "-p" + " " * 4000 + "!"),
    ("pyproject.toml", "[" + " " * 4000 + "!"),
    ("pyproject.toml", "[[" + " \t" * 2000 + "]"),
]
_MEGABYTE = 1 << 20


@pytest.mark.parametrize(("path", "line"), _CASES, ids=[f"{p}:{text[:8]!r}" for p, text in _CASES])
def test_a_megabyte_of_adversarial_lines_screens_quickly(path: str, line: str) -> None:
    """About 0.1 to 1.1 s of CPU each; 10 s leaves room for a slower machine. Measured in
    this process's CPU time, not on the wall clock: a loaded machine (a CI runner, other test
    processes) stretches the wall time several times over, while the quadratic cases this
    guards against cost tens of seconds of CPU whatever the load."""
    text = (line + "\n") * (_MEGABYTE // (len(line) + 1))
    change = FileChange(
        path=path, old_path=None, status=ChangeStatus.MODIFIED, old_text=text, new_text=""
    )
    started = time.process_time()
    screen([change], ScreenRules(todo_markers=("TODO",)))
    assert time.process_time() - started < 10
