"""Read-only views of a run computed from its event log (pure): what a user looks at."""

from pipeline.reducers.views._context import MAX_LISTED_TASKS, context_rows
from pipeline.reducers.views._escalation import LadderMove, ladder_moves, ladder_rows
from pipeline.reducers.views._gates import (
    GateOutcome,
    GateRun,
    JudgedHit,
    ScreenOutcome,
    ScreenRun,
    gate_runs,
    screen_runs,
)
from pipeline.reducers.views._responses import (
    LoggedStatus,
    ResponseLogRow,
    response_log,
    response_row,
)
from pipeline.reducers.views._sandbox import (
    RefusedConnection,
    SandboxCheck,
    SandboxView,
    sandbox_view,
)
from pipeline.reducers.views._spend import (
    cost_text,
    dollars,
    models_text,
    spend_line,
    spend_summary,
    tokens_text,
    usage_text,
)
from pipeline.reducers.views._status import (
    active_agent,
    answer_command,
    counted,
    refused_text,
    sandbox_rows,
    screen_at_work,
    screens_text,
    spent,
    status_rows,
)
from pipeline.reducers.views._timeline import InvocationBar, Outcome, PhaseSpan, Timeline, timeline
from pipeline.reducers.views._topics import TopicEntry, topic_log
from pipeline.reducers.views._travel import Change, state_at, state_changes, states_at

__all__ = [
    "MAX_LISTED_TASKS",
    "Change",
    "GateOutcome",
    "GateRun",
    "InvocationBar",
    "JudgedHit",
    "LadderMove",
    "LoggedStatus",
    "Outcome",
    "PhaseSpan",
    "RefusedConnection",
    "ResponseLogRow",
    "SandboxCheck",
    "SandboxView",
    "ScreenOutcome",
    "ScreenRun",
    "Timeline",
    "TopicEntry",
    "active_agent",
    "answer_command",
    "context_rows",
    "cost_text",
    "counted",
    "dollars",
    "gate_runs",
    "ladder_moves",
    "ladder_rows",
    "models_text",
    "refused_text",
    "response_log",
    "response_row",
    "sandbox_rows",
    "sandbox_view",
    "screen_at_work",
    "screen_runs",
    "screens_text",
    "spend_line",
    "spend_summary",
    "spent",
    "state_at",
    "state_changes",
    "states_at",
    "status_rows",
    "timeline",
    "tokens_text",
    "topic_log",
    "usage_text",
]
