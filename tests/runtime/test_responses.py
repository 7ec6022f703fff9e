"""Structured responses end to end: real `ralph` processes, the scripted agent, real git.

The developer's hat asks for an ``agent-response``: a malformed answer is followed by
formatting-correction turns with the same agent, at most two; then a person is needed, and
`ralph resume` goes on after they acted.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from pipeline.core.responses import AGENT_RESPONSE
from pipeline.events import (
    HumanInterventionRequired,
    InvocationStarted,
    ResponseStatus,
    ResponseSubmitted,
    Role,
    RunCompleted,
    TerminationReason,
)
from pipeline.handlers.runtime import WorkspaceLayout
from tests.runtime.test_loop_control import step, workspace
from tests.runtime.workspace import ralph, stored_events

# Whole runs in subprocesses, seconds a test; the fast loop has their decisions from
# tests/reducers/test_response_decisions.py (the correction turns' bound and log) and
# tests/handlers/test_responses.py (the verdicts).
pytestmark = pytest.mark.slow

VALID = """'{"action": "report", "parameters": {"files": 2}}'"""
FENCED = """'''```json
{"action": "report", "parameters": {}}
```'''"""
JS_OBJECT = """'''{ action: 'report' }'''"""
MISSING_PARAMETERS = """'{"action": "report"}'"""

HAT = '[hats.developer]\nresponse_schema = "agent-response"\n'


def answer(raw_toml: str, kind: str = "development", extra: str = "") -> str:
    """A step of ``kind`` that answers ``raw_toml`` (a TOML string) in response.json."""
    body = f'write.".agent/out/response.json" = {raw_toml}\n{extra}'
    if kind == "development":
        return step("development", extra=body)
    return f"[[{kind}]]\n{body}\n"


def developer_calls(root: Path) -> list[InvocationStarted]:
    return [
        e
        for e in stored_events(root)
        if isinstance(e, InvocationStarted) and e.role is Role.DEVELOPER
    ]


def verdicts(root: Path) -> list[ResponseStatus]:
    responses = [e for e in stored_events(root) if isinstance(e, ResponseSubmitted)]
    return [r.status for r in responses]


def test_a_valid_answer_needs_one_call(tmp_path: Path) -> None:
    """Valid at once: one call, the report collected, the run completes."""
    root = workspace(tmp_path, answer(VALID), hats=HAT)
    result = ralph("run", cwd=root)
    assert result.returncode == 0, result.stdout + result.stderr
    assert len(developer_calls(root)) == 1
    assert verdicts(root) == [ResponseStatus.VALID]


def test_invalid_then_valid_takes_two_calls_and_the_run_goes_on(tmp_path: Path) -> None:
    """One correction turn with the same agent; its prompt holds the raw response, the
    violations, the schema and the directive, and nothing of the task's prompt."""
    script = answer(JS_OBJECT) + answer(
        VALID, "format_correction", 'save_prompt = ".ralph/correction.md"'
    )
    root = workspace(tmp_path, script, hats=HAT)
    result = ralph("run", cwd=root)
    assert result.returncode == 0, result.stdout + result.stderr
    calls = developer_calls(root)
    assert len(calls) == 2
    assert calls[0].agent == calls[1].agent
    assert verdicts(root) == [ResponseStatus.INVALID_JSON, ResponseStatus.VALID]
    prompt = (root / ".ralph" / "correction.md").read_text()
    assert "{ action: 'report' }" in prompt
    assert "not one JSON value" in prompt
    assert (
        "Return ONLY a valid JSON object conforming to the schema. "
        "Do not include markdown fences or prose." in prompt
    )
    assert '"required"' in prompt
    assert "invalid JSON: " in prompt
    assert "Make the tests pass." not in prompt
    assert "Role: developer" not in prompt
    (completed,) = [e for e in stored_events(root) if isinstance(e, RunCompleted)]
    assert completed.reason is TerminationReason.COMPLETED


def test_invalid_twice_then_valid_takes_three_calls_and_logs_three_rows(tmp_path: Path) -> None:
    """A JavaScript-style object, then a fenced one, then a valid answer: 3 calls, and
    agent_response_log rows MALFORMED, MALFORMED, SUCCESS with correction_attempt 0, 1, 2;
    `ralph projections rebuild` recreates exactly the same table from the events."""
    script = (
        answer(JS_OBJECT) + answer(FENCED, "format_correction") + answer(VALID, "format_correction")
    )
    root = workspace(tmp_path, script, hats=HAT)
    result = ralph("run", cwd=root)
    assert result.returncode == 0, result.stdout + result.stderr
    assert len(developer_calls(root)) == 3
    # The correction turns answer again for the first attempt; they are no attempts.
    assert [call.attempt for call in developer_calls(root)] == [1, 1, 1]
    live = response_table(root)
    assert [(r[5], r[7], r[3]) for r in live] == [
        ("MALFORMED", 0, 1),
        ("MALFORMED", 1, 2),
        ("SUCCESS", 2, 3),
    ]
    assert len({r[2] for r in live}) == 1  # one task
    assert "invalid JSON" in json.loads(live[0][6])[0]
    assert json.loads(live[2][6]) == []
    rebuilt = ralph("projections", "rebuild", str(WorkspaceLayout(root=root).store), cwd=root)
    assert rebuilt.returncode == 0, rebuilt.stderr
    # Every projection's rows are made anew: the three responses, the run's summary and the
    # parts of its status (as many as the run has: rows, question, start, sandbox, commits).
    db = sqlite3.connect(WorkspaceLayout(root=root).store)
    try:
        (summaries,) = db.execute("SELECT count(*) FROM run_summaries").fetchone()
        (parts,) = db.execute("SELECT count(*) FROM run_status").fetchone()
    finally:
        db.close()
    assert (summaries, parts > 0) == (1, True)
    assert f"{3 + summaries + parts} rows from 1 runs" in rebuilt.stdout
    assert [(r[5], r[7], r[3]) for r in response_table(root)] == [(r[5], r[7], r[3]) for r in live]
    assert response_table(root) == live


def response_table(root: Path) -> list[tuple[object, ...]]:
    """Every row of agent_response_log, as stored."""
    db = sqlite3.connect(WorkspaceLayout(root=root).store)
    try:
        return db.execute("SELECT * FROM agent_response_log ORDER BY id").fetchall()
    finally:
        db.close()


def test_always_invalid_stops_after_three_calls_for_a_person_then_resumes(
    tmp_path: Path,
) -> None:
    """Exactly 3 calls, then HUMAN_INTERVENTION_REQUIRED / FORMATTING_CORRECTION_EXHAUSTED
    with the last response and its violations; exit 3. After the person fixed the agent,
    `ralph resume` runs the task again and the run completes."""
    script = answer(JS_OBJECT) + answer(MISSING_PARAMETERS, "format_correction")
    root = workspace(tmp_path, script, hats=HAT)
    result = ralph("run", cwd=root)
    assert result.returncode == 3, result.stdout + result.stderr
    assert "human_intervention_required" in result.stdout
    assert len(developer_calls(root)) == 3
    (needed,) = [e for e in stored_events(root) if isinstance(e, HumanInterventionRequired)]
    assert needed.reason == "FORMATTING_CORRECTION_EXHAUSTED"
    assert "3 malformed structured responses" in needed.detail
    assert """'{"action": "report"}'""" in needed.detail
    assert "'parameters' is a required property" in needed.detail
    # The person fixes the agent: from now on it answers well.
    (root / ".ralph" / "script.toml").write_text(answer(VALID) + step("default"))
    (root / ".agent" / "scripted-agent-state.json").unlink()
    resumed = ralph("resume", cwd=root)
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert len(developer_calls(root)) == 4
    (completed,) = [e for e in stored_events(root) if isinstance(e, RunCompleted)]
    assert completed.reason is TerminationReason.COMPLETED


def test_a_missing_or_broken_schema_file_stops_the_run_before_any_agent(tmp_path: Path) -> None:
    """response_schema naming no file, or a file that is no JSON Schema: exit 2, one line."""
    root = workspace(tmp_path, answer(VALID), hats='[hats.developer]\nresponse_schema = "s.json"\n')
    missing = ralph("run", cwd=root)
    assert missing.returncode == 2
    assert "hats.developer.response_schema: cannot read" in missing.stderr
    (root / "s.json").write_text('{"type": 12}')
    broken = ralph("run", cwd=root)
    assert broken.returncode == 2
    assert "is not a valid JSON Schema" in broken.stderr
    assert not WorkspaceLayout(root=root).store.exists()


def test_the_schema_checked_before_the_run_is_the_one_it_uses(tmp_path: Path) -> None:
    """The schema file is read once, when the workspace is opened: removing it afterwards
    changes nothing for the run that was checked with it."""
    from pipeline.app.workspace import drive, open_workspace, resolve_prompt

    root = workspace(tmp_path, answer(VALID), hats='[hats.developer]\nresponse_schema = "s.json"\n')
    (root / "s.json").write_text(json.dumps(AGENT_RESPONSE.value))
    opened = open_workspace(root)
    (root / "s.json").unlink()
    result = drive(opened, prompt=resolve_prompt(opened, None, None), run_id=None, signals=False)
    assert result.state.termination is TerminationReason.COMPLETED
    assert verdicts(root) == [ResponseStatus.VALID]
