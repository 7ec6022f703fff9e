"""The state of a pipeline run and the views decisions are made from (pure)."""

from pipeline.state.model import (
    FEEDBACK_EXCERPT_CHARS,
    MAX_FEEDBACK_LINES,
    AgentCursor,
    Checkpoints,
    Intake,
    Ledger,
    MalformedLineNote,
    PendingQuestion,
    PipelineState,
    Progress,
    ProtectedPrompt,
    RunInfo,
    is_complete,
    is_terminal,
)
from pipeline.state.phase import (
    RUNNING_PHASES,
    TERMINAL_PHASES,
    Phase,
    Step,
    prompt_kind_for,
    role_for,
)
from pipeline.state.termination import EXIT_CODES, TerminationReason

__all__ = [
    "EXIT_CODES",
    "FEEDBACK_EXCERPT_CHARS",
    "MAX_FEEDBACK_LINES",
    "RUNNING_PHASES",
    "TERMINAL_PHASES",
    "AgentCursor",
    "Checkpoints",
    "Intake",
    "Ledger",
    "MalformedLineNote",
    "PendingQuestion",
    "Phase",
    "PipelineState",
    "Progress",
    "ProtectedPrompt",
    "RunInfo",
    "Step",
    "TerminationReason",
    "is_complete",
    "is_terminal",
    "prompt_kind_for",
    "role_for",
]
