"""Time travel: the state at any point of a log is the fold of its prefix, and the changes
between two points name exactly the fields that differ; ``ralph diff`` shows them with the
facts in between."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pipeline.app.testing import simulated_runs
from pipeline.core.state import Phase, PipelineState
from pipeline.reducers import fold
from pipeline.reducers.views import state_at, state_changes, states_at
from tests.cli.test_cli import ralph


@settings(max_examples=12, deadline=None)
@given(run=simulated_runs(), data=st.data())
def test_the_state_at_any_point_is_the_fold_of_the_logs_prefix(
    run: tuple[object, tuple[object, ...], PipelineState], data: st.DataObject
) -> None:
    _config, events, final = run
    points = data.draw(st.lists(st.integers(0, len(events) + 3), min_size=1, max_size=4))
    found = states_at(events, points)  # type: ignore[arg-type]
    assert found == [fold(events[:point]) for point in points]  # type: ignore[arg-type]
    assert state_at(events, len(events)) == final  # type: ignore[arg-type]


@settings(max_examples=12, deadline=None)
@given(run=simulated_runs(), data=st.data())
def test_the_changes_between_two_points_are_exactly_the_fields_that_differ(
    run: tuple[object, tuple[object, ...], PipelineState], data: st.DataObject
) -> None:
    _config, events, _final = run
    start = data.draw(st.integers(0, len(events)))
    end = data.draw(st.integers(start, len(events)))
    before, after = states_at(events, (start, end))  # type: ignore[arg-type]
    changes = state_changes(before, after)
    assert (changes == []) == (before == after)
    assert len({change.path for change in changes}) == len(changes)
    for change in changes:
        assert change.before != change.after
        assert _at(before, change.path) == change.before
        assert _at(after, change.path) == change.after


def _at(state: object, path: str) -> object:
    """The value at ``path``: dotted fields, then quoted map keys (by their value or name)."""
    value = state
    for field, key in re.findall(r'\.?([A-Za-z_]+)|\[("(?:[^"\\]|\\.)*")\]', path):
        if field:
            value = getattr(value, field)
        else:
            wanted = json.loads(key)
            assert isinstance(value, dict)
            value = next(
                (v for k, v in value.items() if str(getattr(k, "value", k)) == wanted), None
            )
    return value


@pytest.mark.slow
def test_ralph_diff_shows_the_changes_and_the_facts_between_two_points(tmp_path: Path) -> None:
    made = ralph("demo", "demo", "--quiet", cwd=tmp_path)
    assert made.returncode == 0, made.stderr
    root = tmp_path / "demo"
    events = ralph("events", "--format", "jsonl", cwd=root).stdout.splitlines()
    first_plan = next(
        number
        for number, line in enumerate(events, 1)
        if json.loads(line)["type"] == "planning.plan_produced"
    )
    done = ralph("diff", "--from", "0", "--to", str(first_plan), "--json", cwd=root)
    assert done.returncode == 0, done.stderr
    document = json.loads(done.stdout)
    changed = {c["field"]: (c["before"], c["after"]) for c in document["changes"]}
    assert changed["sequence"] == (0, first_plan)
    assert changed["progress.phase"] == (Phase.NOT_STARTED.value, Phase.DEVELOPMENT.value)
    assert changed["ledger.plan_digest"][0] is None
    assert len(document["events"]) == first_plan
    shown = ralph("diff", "--from", str(first_plan - 1), "--to", str(first_plan), cwd=root)
    assert shown.returncode == 0, shown.stderr
    assert "ledger.plan_digest" in shown.stdout
    assert "planning.plan_produced" in shown.stdout
    past = ralph("diff", "--to", str(len(events) + 1), cwd=root)
    assert past.returncode == 2
    assert f"holds {len(events)} events" in past.stderr
    backwards = ralph("diff", "--from", "5", "--to", "3", cwd=root)
    assert backwards.returncode == 2
    assert "--from 5 is after --to 3" in backwards.stderr
