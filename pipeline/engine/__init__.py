"""The engine: the loop that joins orchestration, handlers, reducers and the event store."""

from pipeline.engine._context_book import ContextError, read_context, write_note
from pipeline.engine._durable import DurableRun, RunOptions, load_state, run_durable, utc_now
from pipeline.engine._guide import MAX_GUIDANCE_CHARS, GuidanceError, guidable_hats, guide
from pipeline.engine._integrate import LandingSteps, integrate
from pipeline.engine._interrupt import Interrupted, Interruption
from pipeline.engine._memory import LoopBoundExceededError, RunResult, run_in_memory
from pipeline.engine._observer import Observers, RunObserver, TracingObserver
from pipeline.engine._registry import HandlerRegistry, MissingHandlerError
from pipeline.engine._respond import AnswerError, respond
from pipeline.engine._salvage import (
    MAX_SALVAGE_REASON_CHARS,
    NOTHING_DAMAGED,
    NothingToSalvageError,
    RunPresentError,
    Salvaged,
    good_prefix,
    salvage,
)
from pipeline.engine._stores import existing_store
from pipeline.engine._world import RunWorld

__all__ = [
    "MAX_GUIDANCE_CHARS",
    "MAX_SALVAGE_REASON_CHARS",
    "NOTHING_DAMAGED",
    "AnswerError",
    "ContextError",
    "DurableRun",
    "GuidanceError",
    "HandlerRegistry",
    "Interrupted",
    "Interruption",
    "LandingSteps",
    "LoopBoundExceededError",
    "MissingHandlerError",
    "NothingToSalvageError",
    "Observers",
    "RunObserver",
    "RunOptions",
    "RunPresentError",
    "RunResult",
    "RunWorld",
    "Salvaged",
    "TracingObserver",
    "existing_store",
    "good_prefix",
    "guidable_hats",
    "guide",
    "integrate",
    "load_state",
    "read_context",
    "respond",
    "run_durable",
    "run_in_memory",
    "salvage",
    "utc_now",
    "write_note",
]
