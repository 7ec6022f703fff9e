"""The timeline: one bar per invocation, ended by what the log says ended it (properties over
simulated runs, and examples)."""

from __future__ import annotations

import itertools

from hypothesis import given, settings
from hypothesis import strategies as st

from pipeline.app.testing import simulated_runs
from pipeline.events import (
    InvocationFailed,
    InvocationStarted,
    InvocationSucceeded,
    InvocationTimedOut,
    OutputLineMalformed,
    PipelineEvent,
    ProviderLimited,
    RunInterrupted,
    RunResumed,
    TopicPublished,
    UsageReported,
)
from pipeline.reducers import fold
from pipeline.reducers.views import Outcome, timeline
from tests.support import WHOLE_RUNS

_ENDS = {
    InvocationSucceeded: Outcome.SUCCEEDED,
    InvocationFailed: Outcome.FAILED,
    InvocationTimedOut: Outcome.TIMED_OUT,
    ProviderLimited: Outcome.LIMITED,
    RunInterrupted: Outcome.CUT_SHORT,
    RunResumed: Outcome.CUT_SHORT,
}


def _expected_outcomes(log: tuple[PipelineEvent, ...]) -> list[Outcome]:
    """What ended each invocation, read straight off the log."""
    outcomes: list[Outcome] = []
    open_one = False
    for event in log:
        if isinstance(event, InvocationStarted):
            if open_one:
                outcomes.append(Outcome.CUT_SHORT)
            open_one = True
        elif open_one and type(event) in _ENDS:
            outcomes.append(_ENDS[type(event)])
            open_one = False
    if open_one:
        outcomes.append(Outcome.RUNNING)
    return outcomes


@WHOLE_RUNS
@given(run=simulated_runs(), data=st.data())
def test_every_invocation_is_one_bar_ended_by_what_the_log_says(
    run: tuple[object, tuple[PipelineEvent, ...], object], data: st.DataObject
) -> None:
    """For a whole run or any prefix of it: bars numbered in order, one per InvocationStarted,
    each with the outcome the log gives it; the topics and malformed lines after the first
    invocation are all counted on some bar; the final state is the fold."""
    _config, log, _final = run
    log = log[: data.draw(st.integers(0, len(log)), label="prefix")]
    drawn = timeline(log)
    starts = [e for e in log if isinstance(e, InvocationStarted)]
    assert [bar.number for bar in drawn.bars] == list(range(1, len(starts) + 1))
    assert [(bar.role, bar.agent, bar.attempt) for bar in drawn.bars] == [
        (e.role, e.agent, e.attempt) for e in starts
    ]
    assert [bar.outcome for bar in drawn.bars] == _expected_outcomes(log)
    for bar in drawn.bars:
        assert (bar.ended_at is None) == (bar.outcome is Outcome.RUNNING)
        assert bar.duration_s is None or bar.duration_s >= 0
        assert bar.chain_position >= 0
        assert bar.retries >= 0
    after_first = log[log.index(starts[0]) :] if starts else ()
    assert sum(bar.topics for bar in drawn.bars) == sum(
        isinstance(e, TopicPublished) for e in after_first
    )
    assert sum(bar.malformed_lines for bar in drawn.bars) == sum(
        isinstance(e, OutputLineMalformed) for e in after_first
    )
    assert drawn.final == fold(log)
    if log:
        assert drawn.started_at == log[0].at
        assert drawn.ended_at == log[-1].at
        assert drawn.phases[0].started_at == log[0].at
        assert all(a.ended_at == b.started_at for a, b in itertools.pairwise(drawn.phases))
    else:
        assert drawn.bars == ()
        assert drawn.phases == ()


def _expected_usage(log: tuple[PipelineEvent, ...]) -> list[UsageReported | None]:
    """Each invocation's usage, read straight off the log: the first UsageReported after its
    start and before what ended it."""
    usages: list[UsageReported | None] = []
    open_one = False
    for event in log:
        if isinstance(event, InvocationStarted):
            usages.append(None)
            open_one = True
        elif open_one and isinstance(event, UsageReported) and usages[-1] is None:
            usages[-1] = event
        elif open_one and type(event) in _ENDS:
            open_one = False
    return usages


# A third of CI's examples: each draws a whole run and a prefix of it (the slowest law of
# the suite at 300), and the bars themselves are checked at 300 by the test above.
@settings(max_examples=100)
@given(run=simulated_runs(), data=st.data())
def test_each_bar_carries_the_usage_reported_between_its_start_and_its_outcome(
    run: tuple[object, tuple[PipelineEvent, ...], object], data: st.DataObject
) -> None:
    """For a whole run or any prefix: a bar's usage is the UsageReported between its start
    and its outcome (None when there is none), so the report's figures add up to the
    ledger's: every usage fact after the first start is on exactly one bar."""
    _config, log, _final = run
    log = log[: data.draw(st.integers(0, len(log)), label="prefix")]
    drawn = timeline(log)
    assert [bar.usage for bar in drawn.bars] == _expected_usage(log)
    reported = [e for e in log if isinstance(e, UsageReported)]
    assert [bar.usage for bar in drawn.bars if bar.usage is not None] == reported
    spend = drawn.final.ledger.spend.total
    assert sum(bar.usage.tokens for bar in drawn.bars if bar.usage) == spend.tokens
