"""``ralph respond`` answered lean (``pipeline.app.cli._respond_quick``): the question the
run waits on read from the store's ``run_status`` projection, the answer posted to the
store's inbox as the full command posts it; refusals said as the full command says them."""

from __future__ import annotations

from pathlib import Path

from pipeline.app.cli import _app, _respond_quick
from pipeline.events import HumanResponseReceived
from tests.cli.test_quick_commands import _loaded
from tests.runtime.test_loop_control import QUESTION, _pending, workspace
from tests.runtime.workspace import ralph, start_ralph, stored_events

_HEAVY = {"typer", "pipeline.events", "cattrs"}
"""What the lean path does without: its answer shows none of them was loaded."""


def _lean(root: Path, *argv: str) -> bool:
    """Whether ``ralph respond ARGV`` in ``root`` is answered lean (it is run to find out:
    only where running it twice changes nothing)."""
    _said, modules = _loaded(root, "respond", *argv)
    return not _HEAVY & modules


def test_a_refusal_is_said_lean_as_the_full_command_says_it(
    demo_dir: Path,
) -> None:
    """No question waits in the demo's finished run: the lean path says so, exit 2, in the
    full command's words (``--workspace .``, which the lean path leaves alone)."""
    argv = ("respond", "yes", "--question", "q0")
    lean = ralph(*argv, cwd=demo_dir)
    full = ralph(*argv, "--workspace", ".", cwd=demo_dir)
    assert lean.returncode == full.returncode == 2
    assert (lean.stdout, lean.stderr) == (full.stdout, full.stderr)
    assert "is not waiting for an answer" in lean.stderr
    assert _lean(demo_dir, *argv[1:])


def test_the_usage_error_status_is_the_apps() -> None:
    """The lean path exits as the full command does when the answer is refused."""
    assert _respond_quick._USAGE_ERROR == _app.USAGE_ERROR


def test_a_waiting_run_takes_the_answer_posted_lean(tmp_path: Path) -> None:
    """While a run waits: a wrong question id is refused lean in the full command's words;
    the right one is answered lean (without attrs or subprocess), and the run records the
    answer."""
    root = workspace(tmp_path, QUESTION, loop="human_timeout_s = 120")
    process = start_ralph("run", cwd=root)
    try:
        _run_id, question = _pending(root)
        wrong = ("respond", "yes", "--question", "nope")
        lean, full = ralph(*wrong, cwd=root), ralph(*wrong, "--workspace", ".", cwd=root)
        assert lean.returncode == full.returncode == 2
        assert (lean.stdout, lean.stderr) == (full.stdout, full.stderr)
        assert f"it waits on {question.question_id}" in lean.stderr
        assert _lean(root, *wrong[1:])
        said, modules = _loaded(root, "respond", "Use SQLite", "--question", question.question_id)
        assert not (_HEAVY | {"attrs", "subprocess"}) & modules
        assert f"Answered {question.question_id} of run " in said
        out, err = process.communicate(timeout=120)
    finally:
        process.kill()
    assert process.returncode == 0, out + err
    (response,) = [e for e in stored_events(root) if isinstance(e, HumanResponseReceived)]
    assert response.text == "Use SQLite"
