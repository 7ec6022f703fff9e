"""Hats and loop control end to end: real `ralph` processes, the scripted agent, real git.

Scope violations and refused completions reach the agent's next prompt; cancellation exits 0
and says it is no success; a question waits for `ralph respond`, times out into the next
prompt, and survives kill -9 with its deadline.
"""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import pytest

from pipeline.core.state import PendingQuestion
from pipeline.engine import load_state
from pipeline.events import (
    HumanQuestionAsked,
    HumanResponseReceived,
    HumanTimedOut,
    InvocationStarted,
    RunCompleted,
    RunId,
    RunResumed,
    TerminationReason,
)
from pipeline.handlers.runtime import WorkspaceLayout
from pipeline.handlers.store import SqliteEventStore
from tests.runtime.workspace import (
    commit_all,
    make_workspace,
    ralph,
    scripted,
    start_ralph,
    stored_events,
)

pytestmark = pytest.mark.slow  # whole runs in subprocesses: seconds a test

REPORTS = """
write.".agent/out/plan.md" = "1. do it"
write.".agent/out/status" = "{status}\\nsummary"
write.".agent/out/issues.md" = ""
write.".agent/out/commit-message" = "Do it"
write."work.txt" = "done"
"""
"""Every role's report, and a change to commit (a run that commits nothing is no success)."""


def step(kind: str, *, status: str = "completed", extra: str = "") -> str:
    """One script step of ``kind`` that reports success (with ``status``) plus ``extra``."""
    return f"[[{kind}]]\n{extra}\n{REPORTS.format(status=status)}\n"


def workspace(tmp_path: Path, script: str, loop: str = "", hats: str = "") -> Path:
    """A repository whose every role is the scripted agent following ``script``."""
    return make_workspace(
        tmp_path / "ws",
        scripts={"script.toml": script + step("default")},
        agents={"main": scripted("script.toml")},
        budgets="max_iterations = 3\nmax_review_passes = 1\nbackoff_base_ms = 10\n"
        "backoff_cap_ms = 20",
        extra=f"[loop]\n{loop}\n{hats}\n",
    )


def test_an_out_of_scope_topic_is_reported_in_the_next_prompt_and_the_topic_log(
    tmp_path: Path,
) -> None:
    """The planner's hat may not publish review.passed: the topic is not acted on, the
    developer's prompt says so, `ralph topics` shows planner.scope_violation, and the hat's
    instructions and scope are in the developer's prompt."""
    script = step("planning", extra='emit = [["review.passed", "looks fine"]]') + step(
        "development", extra='save_prompt = ".ralph/dev-prompt.md"'
    )
    hats = '[hats.developer]\nname = "builder"\ninstructions = "Write the test first."\n'
    root = workspace(tmp_path, script, loop="enforce_hat_scope = true", hats=hats)
    result = ralph("run", cwd=root)
    assert result.returncode == 0, result.stdout + result.stderr
    prompt = (root / ".ralph" / "dev-prompt.md").read_text()
    assert "## Your hat: builder" in prompt
    assert "Write the test first." in prompt
    assert "You may publish only these topics: `build.**`, `task.**`" in prompt
    assert (
        "- `planner.scope_violation`: Attempted to publish 'review.passed': \"looks fine\""
        in prompt
    )
    topics = ralph("topics", cwd=root).stdout
    assert """planner.scope_violation  "Attempted to publish 'review.passed'""" in topics
    assert "review.passed  " not in topics


def test_a_hat_gives_its_role_its_own_model_and_agent_arguments(tmp_path: Path) -> None:
    """[hats.reviewer] model and args apply to the reviewer's invocations only."""
    root = tmp_path / "ws"
    agent = tmp_path / "agent.sh"
    agent.write_text(
        '#!/bin/sh\necho "$RALPH_ROLE $*" >> .ralph/argv\nmkdir -p .agent/out\n'
        "printf '1. do it' > .agent/out/plan.md\nprintf 'completed\\nok' > .agent/out/status\n"
        ": > .agent/out/issues.md\nprintf 'Do it' > .agent/out/commit-message\n"
        "echo done > work.txt\n"
    )
    agent.chmod(0o755)
    make_workspace(
        root,
        scripts={},
        agents={"main": [str(agent)]},
        extra='[hats.reviewer]\nmodel = "big-model"\nargs = ["--careful"]\n',
    )
    result = ralph("run", cwd=root)
    assert result.returncode == 0, result.stdout + result.stderr
    calls = [line.strip() for line in (root / ".ralph" / "argv").read_text().splitlines()]
    assert "reviewer --careful" in calls
    assert "developer" in calls
    started = [e for e in stored_events(root) if isinstance(e, InvocationStarted)]
    assert {e.model for e in started if e.role.value == "reviewer"} == {"big-model"}
    assert {e.model for e in started if e.role.value != "reviewer"} == {None}


def test_cancellation_exits_zero_but_is_no_success(tmp_path: Path) -> None:
    """loop.cancel from the developer: exit 0, the summary says cancelled (not a success), and
    the log records why the run ended."""
    script = step("development", status="partial", extra='emit = [["loop.cancel", "stuck"]]')
    root = workspace(tmp_path, script, loop='cancellation_promise = "loop.cancel"')
    result = ralph("run", cwd=root)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Exit status 0: cancelled (not a success)" in result.stdout
    (completed,) = [e for e in stored_events(root) if isinstance(e, RunCompleted)]
    assert completed.reason is TerminationReason.CANCELLED


def test_completion_is_refused_until_the_required_events_were_seen(tmp_path: Path) -> None:
    """Iteration 1 claims completion too early: refused, and the next prompt carries the
    task.resume notice. Iteration 2 publishes review.passed and claims again: accepted, the
    work is committed, reviewed once (the claim is reviewed before the final check) and
    validated, and the run completes without iteration 3."""
    script = step("development", status="partial", extra='emit = [["LOOP_COMPLETE", ""]]') + step(
        "development",
        status="partial",
        extra='emit = [["review.passed", ""], ["LOOP_COMPLETE", ""]]\n'
        'save_prompt = ".ralph/second.md"',
    )
    loop = 'required_events = ["review.passed"]\ncancellation_promise = "loop.cancel"'
    root = workspace(tmp_path, script, loop=loop)
    result = ralph("run", cwd=root)
    assert result.returncode == 0, result.stdout + result.stderr
    second = (root / ".ralph" / "second.md").read_text()
    assert "- `task.resume`: Completion refused: required events not yet seen: review.passed" in (
        second
    )
    assert "'loop.cancel'" in second
    events = stored_events(root)
    roles = [e.role.value for e in events if isinstance(e, InvocationStarted)]
    assert roles.count("developer") == 2
    assert roles[roles.index("developer") :].count("reviewer") == 1
    assert roles[-1] == "reviewer"
    (completed,) = [e for e in events if isinstance(e, RunCompleted)]
    assert completed.reason is TerminationReason.COMPLETED


QUESTION = step(
    "development",
    status="partial",
    extra='emit = [["human.interact", "Which database should I use?"]]',
) + step("development", extra='save_prompt = ".ralph/after-question.md"')


def _pending(
    root: Path, within_s: float = 60, runs_before: int = 0
) -> tuple[RunId, PendingQuestion]:
    """The question the workspace's run (the one after ``runs_before`` runs) waits on, as soon
    as the log shows it asked (with its id)."""
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        store_path = WorkspaceLayout(root=root).store
        if store_path.is_file():
            with SqliteEventStore(store_path) as store:
                runs = store.runs()
                if len(runs) > runs_before:
                    state, _ = load_state(store, runs[-1].run_id)
                    question = state.ledger.pending_question
                    if question is not None and question.asked:
                        return runs[-1].run_id, question
        time.sleep(0.1)
    raise AssertionError("no question was asked")


def test_ralph_respond_answers_a_waiting_question_and_the_answer_reaches_the_next_prompt(
    tmp_path: Path,
) -> None:
    """The run waits; `ralph respond` (another process) answers; the next prompt has it."""
    root = workspace(tmp_path, QUESTION, loop="human_timeout_s = 120")
    process = start_ralph("run", cwd=root)
    try:
        _run_id, question = _pending(root)
        assert question.question == "Which database should I use?"
        answered = ralph("respond", "Use PostgreSQL", "--question", question.question_id, cwd=root)
        assert answered.returncode == 0, answered.stderr
        assert f"Answered {question.question_id}" in answered.stdout
        out, err = process.communicate(timeout=120)
    finally:
        process.kill()
    assert process.returncode == 0, out + err
    prompt = (root / ".ralph" / "after-question.md").read_text()
    assert "- `human.response`: Use PostgreSQL" in prompt
    (response,) = [e for e in stored_events(root) if isinstance(e, HumanResponseReceived)]
    assert response.text == "Use PostgreSQL"
    again = ralph("respond", "too late", "--question", question.question_id, cwd=root)
    assert again.returncode == 2
    assert "is not waiting for an answer" in again.stderr


def test_a_required_human_response_cannot_be_skipped_by_reporting_completed(
    tmp_path: Path,
) -> None:
    """required_events = ["human.response"] and nobody asks: the developer reports completed,
    the review is clean, validation passes, yet the run does not end completed (exit 0): the
    gate refuses each time and the budget ends it."""
    root = workspace(tmp_path, "", loop='required_events = ["human.response"]')
    result = ralph("run", cwd=root)
    assert result.returncode == TerminationReason.MAX_ITERATIONS.exit_code, result.stdout
    assert "Exit status 2: max_iterations" in result.stdout
    (completed,) = [e for e in stored_events(root) if isinstance(e, RunCompleted)]
    assert completed.reason is TerminationReason.MAX_ITERATIONS


def test_an_answer_from_an_earlier_run_does_not_answer_a_later_runs_question(
    tmp_path: Path,
) -> None:
    """Run 1's question is answered "yes"; run 2 asks the same question at the same line of
    its own events file: it gets no answer (it times out), and run 1's id is refused for it."""
    root = workspace(tmp_path, QUESTION, loop="human_timeout_s = 120")
    first = start_ralph("run", cwd=root)
    try:
        _run_id, question = _pending(root)
        answered = ralph("respond", "yes", "--question", question.question_id, cwd=root)
        assert answered.returncode == 0, answered.stderr
        out, err = first.communicate(timeout=120)
    finally:
        first.kill()
    assert first.returncode == 0, out + err
    # The second run waits briefly: an answer would come at once; none must come at all.
    toml = root / "ralph.toml"
    toml.write_text(toml.read_text().replace("human_timeout_s = 120", "human_timeout_s = 4"))
    (root / ".agent" / "scripted-agent-state.json").unlink()  # the script starts over
    (root / "work.txt").unlink()  # so that the second run's work is a change again
    commit_all(root)
    second = start_ralph("run", cwd=root)
    try:
        second_run, asked = _pending(root, runs_before=1)
        assert asked.question_id != question.question_id
        stale = ralph("respond", "yes", "--question", question.question_id, cwd=root)
        assert stale.returncode == 2
        assert f"is not waiting on question '{question.question_id}'" in stale.stderr
        out, err = second.communicate(timeout=120)
    finally:
        second.kill()
    assert second.returncode == 0, out + err
    with SqliteEventStore(WorkspaceLayout(root=root).store) as store:
        events = list(store.read(second_run))
    assert not [e for e in events if isinstance(e, HumanResponseReceived)]
    assert [e.question_id for e in events if isinstance(e, HumanTimedOut)] == [asked.question_id]


def test_an_agent_writing_answer_files_does_not_answer_its_own_question(tmp_path: Path) -> None:
    """The agent asks and, in the same turn, writes answers where the old handler looked
    (``.ralph/answers/line-N``) under every id it could guess: nobody answered, so the
    question times out and the log never says a person approved."""
    guesses = "\n".join(f'write.".ralph/answers/line-{n}" = "yes, delete it"' for n in range(1, 6))
    asking = step(
        "development",
        status="partial",
        extra='emit = [["human.interact", "May I delete production data?"]]\n' + guesses,
    ) + step("development", extra='save_prompt = ".ralph/after-question.md"')
    root = workspace(tmp_path, asking, loop="human_timeout_s = 2")
    result = ralph("run", cwd=root)
    assert result.returncode == 0, result.stdout + result.stderr
    events = stored_events(root)
    assert not [e for e in events if isinstance(e, HumanResponseReceived)]
    assert len([e for e in events if isinstance(e, HumanTimedOut)]) == 1
    prompt = (root / ".ralph" / "after-question.md").read_text()
    assert "human.timeout" in prompt
    assert "yes, delete it" not in prompt


def test_an_unanswered_question_times_out_into_the_next_prompt(tmp_path: Path) -> None:
    """No answer within human_timeout_s: a human.timeout notice, never a silent continue."""
    root = workspace(tmp_path, QUESTION, loop="human_timeout_s = 1")
    result = ralph("run", cwd=root)
    assert result.returncode == 0, result.stdout + result.stderr
    prompt = (root / ".ralph" / "after-question.md").read_text()
    expected = "No response after 1s. Original question: Which database should I use?"
    assert f"- `human.timeout`: {expected}" in prompt
    assert len([e for e in stored_events(root) if isinstance(e, HumanTimedOut)]) == 1
    # Plain output (not a terminal) says once that the run waits, and how to answer.
    (asked,) = [e for e in stored_events(root) if isinstance(e, HumanQuestionAsked)]
    (waiting,) = [line for line in result.stdout.splitlines() if "waiting for a person" in line]
    assert "'Which database should I use?'" in waiting
    assert f"--question {asked.question_id} 'YOUR ANSWER'" in waiting
    assert f"ralph respond -C {root}" in waiting
    topics = ralph("topics", cwd=root).stdout
    assert f'human.timeout  "{expected}"' in topics


@pytest.mark.slow
def test_a_run_killed_while_waiting_waits_again_until_the_same_deadline(tmp_path: Path) -> None:
    """kill -9 during the wait; `ralph resume` waits for the same question until the deadline
    in the log (not a fresh timeout), then records the timeout once."""
    root = workspace(tmp_path, QUESTION, loop="human_timeout_s = 5")
    process = start_ralph("run", cwd=root)
    try:
        run_id, question = _pending(root)
        time.sleep(1)
        os.kill(process.pid, signal.SIGKILL)
        process.wait(timeout=10)
    finally:
        process.kill()
    resumed_at = time.time()
    result = ralph("resume", run_id, cwd=root)
    assert result.returncode == 0, result.stdout + result.stderr
    events = stored_events(root)
    (resumed,) = [e for e in events if isinstance(e, RunResumed)]
    (timed_out,) = [e for e in events if isinstance(e, HumanTimedOut)]
    assert timed_out.question_id == question.question_id
    # The resumed wait ended at the logged deadline, never before it, and sooner than a fresh
    # 5 s wait from the resumption could have (bounded by the resumption's own recorded time,
    # not by how fast a loaded machine polls: CI once took 1.8 s past the deadline).
    assert question.deadline.timestamp() < resumed_at + 5
    assert question.deadline <= timed_out.at
    assert (timed_out.at - resumed.at).total_seconds() < 5


def test_ralph_respond_refuses_clearly_when_there_is_nothing_to_answer(tmp_path: Path) -> None:
    """No store, an unknown run, an empty answer: exit 2 with a message, nothing written."""
    empty = tmp_path / "empty"
    empty.mkdir()
    no_store = ralph("respond", "yes", "--question", "q", cwd=empty)
    assert no_store.returncode == 2
    assert "no runs in" in no_store.stderr
    root = workspace(tmp_path, QUESTION, loop="human_timeout_s = 120")
    process = start_ralph("run", cwd=root)
    try:
        _run_id, question = _pending(root)
        asked = question.question_id
        unknown = ralph("respond", "yes", "--question", asked, "--run", "no-such-run", cwd=root)
        assert unknown.returncode == 2
        assert "no run 'no-such-run'" in unknown.stderr
        blank = ralph("respond", "   ", "--question", asked, cwd=root)
        assert blank.returncode == 2
        assert "the answer is empty" in blank.stderr
        # A wrong id, or the predictable line-N id of the topic, answers nothing.
        for wrong in ("line-1", "0" * 32):
            refused = ralph("respond", "yes", "--question", wrong, cwd=root)
            assert refused.returncode == 2
            assert f"is not waiting on question '{wrong}'" in refused.stderr
            assert f"--question {asked}" in refused.stderr
        assert ralph("respond", "fine", "--question", asked, cwd=root).returncode == 0
        out, err = process.communicate(timeout=120)
    finally:
        process.kill()
    assert process.returncode == 0, out + err
