"""What the next agent learns from a failed final check: enough of its output to see the
failing test and its assertion, and where the whole log is (real ``ralph run``)."""

from __future__ import annotations

from pathlib import Path

from pipeline.events import FinalValidationFailed
from tests.runtime.workspace import (
    FINISH_EVERYTHING,
    PYTHON,
    commit_all,
    make_workspace,
    ralph,
    scripted,
    stored_events,
)

_FAILING_TEST = """\
import unittest


class Answer(unittest.TestCase):
    def test_the_answer_is_42(self):
        self.assertEqual(41, 42)


if __name__ == "__main__":
    unittest.main()
"""


def test_a_failed_unittest_check_reaches_the_next_prompt_with_its_assertion_and_log(
    tmp_path: Path,
) -> None:
    """unittest prints the failure above a five-line summary: the failing test's name and
    its assertion are in the fact and in the next development prompt, with the log's path."""
    root = make_workspace(
        tmp_path / "ws",
        scripts={"s.toml": FINISH_EVERYTHING},
        agents={"main": scripted("s.toml")},
        budgets="max_iterations = 2\nmax_review_passes = 0",
        extra=f'validate = ["{PYTHON}", "-m", "unittest", "test_answer"]',
    )
    (root / "test_answer.py").write_text(_FAILING_TEST)
    commit_all(root)  # the person's own test, committed: a new run refuses a dirty tree
    result = ralph("run", "--plain", cwd=root, timeout=300)
    assert result.returncode != 0, result.stdout + result.stderr
    failed = [e for e in stored_events(root) if isinstance(e, FinalValidationFailed)]
    assert failed, result.stdout
    reason = failed[0].reason
    assert "test_the_answer_is_42" in reason
    assert "AssertionError: 41 != 42" in reason
    log = reason.split("its whole output: ", 1)[1].split(")", 1)[0]
    assert (root / log).is_file()
    assert "AssertionError: 41 != 42" in (root / log).read_text()
    prompt = (root / ".agent" / "prompts" / "development.md").read_text()
    assert "AssertionError: 41 != 42" in prompt
    assert log in prompt
