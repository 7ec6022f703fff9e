"""Agent event intake: the run's events file, its marker, and ``emit`` (I/O).

Its names are imported on first use: ``ralph emit`` needs two small modules of it, not the
reader and the events it builds."""

from __future__ import annotations

from pipeline.handlers._lazy import lazy_names

# ``typing`` is imported for the type checker only: ``ralph emit`` loads this module, and
# an agent runs it once per topic.
TYPE_CHECKING = False

if TYPE_CHECKING:
    from pipeline.handlers.intake._bounded import IntakeLimits, read_bounded
    from pipeline.handlers.intake._card import Card, CardMemory, CardTask, write_card
    from pipeline.handlers.intake._emit import (
        MAX_TOPIC_CHARS,
        TOPIC_PATTERN,
        EmitError,
        emit,
        emit_line,
        emit_value,
        end_unfinished_line,
        topic_problem,
    )
    from pipeline.handlers.intake._facts import (
        MAX_PAYLOAD_DEPTH,
        read_agent_events,
        storable_payload,
    )
    from pipeline.handlers.intake._files import (
        MARKER,
        EventsFileError,
        UnsafeFileError,
        card_path,
        checked_events_path,
        emit_target,
        open_regular,
        read_marker,
        workspace_root,
        write_marker,
    )
    from pipeline.handlers.intake._reader import (
        AgentLine,
        EventsFileReader,
        MalformedLine,
        ReadResult,
        parse_lines,
    )

__all__ = [
    "MARKER",
    "MAX_PAYLOAD_DEPTH",
    "MAX_TOPIC_CHARS",
    "TOPIC_PATTERN",
    "AgentLine",
    "Card",
    "CardMemory",
    "CardTask",
    "EmitError",
    "EventsFileError",
    "EventsFileReader",
    "IntakeLimits",
    "MalformedLine",
    "ReadResult",
    "UnsafeFileError",
    "card_path",
    "checked_events_path",
    "emit",
    "emit_line",
    "emit_target",
    "emit_value",
    "end_unfinished_line",
    "open_regular",
    "parse_lines",
    "read_agent_events",
    "read_bounded",
    "read_marker",
    "storable_payload",
    "topic_problem",
    "workspace_root",
    "write_card",
    "write_marker",
]

__getattr__ = lazy_names(__name__, globals())
