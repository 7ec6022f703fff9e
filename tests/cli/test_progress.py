"""How a run is shown while it goes: the live panel on a terminal (a real pseudo-terminal),
plain lines, JSON logs."""

from __future__ import annotations

import os
import pty
import select
import subprocess
from datetime import UTC, datetime
from pathlib import Path

import attrs
import orjson
import pytest
from rich.console import Console

from pipeline.app.cli._progress import Display, LiveView, choose_display
from pipeline.app.cli._render import state_rows
from pipeline.core.serialization import decode_event, decode_stored_event
from pipeline.core.state import Ledger, PendingQuestion, PipelineState, Spend, SpendLine
from pipeline.events import (
    GateAction,
    GateFinished,
    GateStarted,
    GateStatus,
    Instant,
    PipelineEvent,
    QuestionId,
)
from pipeline.reducers import reduce
from tests.cli.test_cli import RALPH, ralph
from tests.support import budget, gate_spec, scripted_run


def _in_a_terminal(*args: str, cwd: Path) -> tuple[int, str]:
    """``ralph ARGS`` with stdout and stderr on a pseudo-terminal; its exit code and output."""
    master, slave = pty.openpty()
    env = {**os.environ, "COLUMNS": "120", "LINES": "40", "TERM": "xterm-256color"}
    env.pop("NO_COLOR", None)
    process = subprocess.Popen(
        [*RALPH, *args], cwd=cwd, stdout=slave, stderr=slave, stdin=subprocess.DEVNULL, env=env
    )
    os.close(slave)
    chunks = []
    while True:
        ready, _, _ = select.select([master], [], [], 0.5)
        if ready:
            try:
                data = os.read(master, 65536)
            except OSError:  # the other end closed: the process has exited
                break
            if not data:
                break
            chunks.append(data)
        elif process.poll() is not None:
            break
    os.close(master)
    return process.wait(timeout=120), b"".join(chunks).decode(errors="replace")


def test_choose_display_follows_the_options_and_the_terminal() -> None:
    """--json-logs wins, then --quiet; plain when asked or when not a terminal."""
    assert choose_display(terminal=True, plain=False, quiet=False, json_logs=False) is Display.LIVE
    assert choose_display(terminal=False, plain=False, quiet=False, json_logs=False) is (
        Display.PLAIN
    )
    assert choose_display(terminal=True, plain=True, quiet=False, json_logs=False) is (
        Display.PLAIN
    )
    assert choose_display(terminal=True, plain=True, quiet=True, json_logs=False) is (Display.QUIET)
    assert choose_display(terminal=False, plain=False, quiet=True, json_logs=True) is (Display.JSON)


def test_the_live_panel_shows_phase_iteration_agent_trouble_topics_and_elapsed_time() -> None:
    """Fed the demo's facts, the panel shows where the run ended, the fallbacks and retries it
    went through, the last topics and the time on its clock."""
    root = Path(__file__).resolve().parents[2]
    lines = (root / "tests" / "fixtures" / "schema-v3-run.jsonl").read_bytes().splitlines()
    now = [100.0]
    view = LiveView(clock=lambda: now[0])
    state = PipelineState()
    for line in lines:
        row = orjson.loads(line)
        event = decode_stored_event(orjson.dumps(row["body"]), row["schema_version"], "fixture")
        state = reduce(state, event)
        view.record(state, event)
    now[0] = 100.0 + 125
    console = Console(record=True, width=120, color_system=None)
    console.print(view)
    text = console.export_text()
    assert "elapsed 2m05s" in text
    assert f"iteration  {state.progress.iteration}/{state.run.budget.max_iterations}" in text
    assert f"{state.ledger.agent_failures} agent failures" in text
    assert f"{view.fallbacks} fallbacks, {view.retries} retries" in text
    assert view.fallbacks + view.retries > 0
    assert list(view.topics)
    assert ", ".join(view.topics) in text


def test_the_live_panel_shows_the_cost_so_far_with_unknown_costs_named() -> None:
    """The panel's spend row is the ledger's: the known cost, how many invocations are of
    unknown cost (never counted as $0) and the tokens; before any usage, it says so."""
    view = LiveView(clock=lambda: 0.0)
    console = Console(record=True, width=120, color_system=None)
    console.print(view)
    assert "no usage reported, 0 tokens" in console.export_text()
    total = SpendLine(
        invocations=5, cost_usd=0.42, unknown_cost=3, input_tokens=1_000, output_tokens=234
    )
    state = PipelineState(ledger=Ledger(spend=Spend(total=total)))
    view.state = state
    console.print(view)
    assert "$0.4200 + 3 of unknown cost (5 invocations), 1,234 tokens" in console.export_text()
    unknown = SpendLine(invocations=2, unknown_cost=2, output_tokens=7)
    view.state = PipelineState(ledger=Ledger(spend=Spend(total=unknown)))
    console.print(view)
    text = console.export_text()
    assert "unknown (2 invocations), 7 tokens" in text
    assert "$0.0000" not in text


def test_the_live_panel_shows_a_wait_for_a_person_with_the_command_that_answers() -> None:
    """While the run waits on a question, the panel shows the question and the exact
    `ralph respond` command (run, question id, workspace) instead of an agent at work."""
    root = Path(__file__).resolve().parents[2]
    first = (root / "tests" / "fixtures" / "schema-v3-run.jsonl").read_bytes().splitlines()[0]
    row = orjson.loads(first)
    state = reduce(
        PipelineState(),
        decode_stored_event(orjson.dumps(row["body"]), row["schema_version"], "fixture"),
    )
    assert state.run is not None
    deadline = Instant(datetime(2026, 5, 1, 12, 30, tzinfo=UTC))
    question = PendingQuestion(
        question_id=QuestionId("9f" * 16),
        question="May I [bold]delete[/bold] production data?",
        deadline=deadline,
        asked=True,
    )
    view = LiveView(clock=lambda: 0.0, workspace=Path("/work/my repo"))
    view.state = attrs.evolve(state, ledger=attrs.evolve(state.ledger, pending_question=question))
    console = Console(record=True, width=200, color_system=None)
    console.print(view)
    text = console.export_text()
    assert "May I [bold]delete[/bold] production data?" in text
    command = (
        f"ralph respond -C '/work/my repo' --run {state.run.run_id} --question {'9f' * 16} "
        "'YOUR ANSWER'"
    )
    assert command in text
    assert "until 2026-05-01 12:30:00" in text
    assert "at work" not in text


@pytest.mark.slow
def test_a_run_on_a_terminal_shows_the_live_panel_and_plain_shows_lines_only(
    tmp_path: Path,
) -> None:
    """On a terminal the demo draws the panel (redrawn in place) above the summary; with
    --plain it prints the same fact lines and no cursor movement."""
    code, live = _in_a_terminal("demo", "live", cwd=tmp_path)
    assert code == 0, live
    assert "at work" in live
    assert "elapsed" in live
    assert "\x1b[1A" in live  # the panel is redrawn in place
    assert "lifecycle.run_completed" in live
    code, plain = _in_a_terminal("demo", "plain", "--plain", cwd=tmp_path)
    assert code == 0, plain
    assert "lifecycle.run_completed" in plain
    assert "elapsed" not in plain
    assert "\x1b[1A" not in plain
    assert "\x1b[2K" not in plain


def test_json_logs_print_one_object_per_fact_and_a_summary(tmp_path: Path) -> None:
    """--json-logs: every line is JSON; the facts decode, in sequence, and the last line sums
    up the run with its exit code."""
    from tests.runtime.workspace import FINISH_EVERYTHING, make_workspace, scripted, stored_events

    root = make_workspace(
        tmp_path / "ws", scripts={"s.toml": FINISH_EVERYTHING}, agents={"main": scripted("s.toml")}
    )
    result = subprocess.run(
        [*RALPH, "run", "--json-logs"], cwd=root, capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stderr
    lines = [orjson.loads(line) for line in result.stdout.splitlines()]
    *facts, last = lines
    stored = stored_events(root)
    assert [decode_event(orjson.dumps(f["event"])) for f in facts] == stored
    assert [f["sequence"] for f in facts] == list(range(len(stored)))
    assert last["summary"]["exit_code"] == 0
    assert last["summary"]["termination"] == "completed"
    assert last["summary"]["events"] == len(stored)


def test_quiet_prints_only_the_summary(tmp_path: Path) -> None:
    """--quiet: no fact lines, the summary and the exit status."""
    result = ralph("demo", "q", "--quiet", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "lifecycle.run_started" not in result.stdout
    assert "Exit status 0: completed" in result.stdout


def _gated_log() -> tuple[PipelineEvent, ...]:
    """A simulated run whose blocking ``tests`` gate fails once, then passes."""
    answers: dict[str, list[object]] = {"gate status": [GateStatus.FAILED, GateStatus.PASSED]}
    gates = (gate_spec(GateAction.BLOCK),)
    return tuple(scripted_run(answers, budget_=budget(max_iterations=4), gates=gates).events)


def _panel(view: LiveView) -> str:
    console = Console(record=True, width=120, color_system=None)
    console.print(view)
    return console.export_text()


def test_the_live_panel_shows_the_gate_at_work_and_counts_gate_blocks() -> None:
    """While a gate's command runs, "at work" names the gate, its boundary and how long it has
    run (``ralph status``'s "active" names it too); once its failure blocked, "trouble" counts
    the block and the developer is at work."""
    log = _gated_log()
    now = [0.0]
    view = LiveView(clock=lambda: now[0])
    state = PipelineState()
    started = next(i for i, e in enumerate(log) if isinstance(e, GateStarted))
    finished = next(i for i, e in enumerate(log) if isinstance(e, GateFinished))
    for event in log[: started + 1]:
        state = reduce(state, event)
        view.record(state, event)
    now[0] = 41.0
    text = _panel(view)
    assert "at work    gate tests (final), since 0m41s" in text
    assert dict(state_rows(state))["active"] == "gate tests (final)"  # ralph status too
    assert "0 gate blocks" in text
    for event in log[started + 1 : finished + 1]:
        state = reduce(state, event)
        view.record(state, event)
    text = _panel(view)
    assert "1 gate blocks" in text
    assert "gate tests" not in text


def test_the_live_panel_of_a_run_without_gates_says_nothing_of_gates() -> None:
    """No gate configured: no gate blocks to count."""
    view = LiveView(clock=lambda: 0.0)
    state = PipelineState()
    for event in scripted_run().events:
        state = reduce(state, event)
        view.record(state, event)
    assert "gate" not in _panel(view)
