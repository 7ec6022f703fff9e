"""Agent event intake: the run's events file, its marker, and ``emit`` (I/O)."""

from pipeline.handlers.intake._bounded import IntakeLimits, read_bounded
from pipeline.handlers.intake._emit import (
    MAX_TOPIC_CHARS,
    TOPIC_PATTERN,
    EmitError,
    emit,
    emit_line,
    topic_problem,
)
from pipeline.handlers.intake._facts import MAX_PAYLOAD_DEPTH, read_agent_events, storable_payload
from pipeline.handlers.intake._files import (
    MARKER,
    EventsFileError,
    UnsafeFileError,
    checked_events_path,
    events_file_for,
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
    "EmitError",
    "EventsFileError",
    "EventsFileReader",
    "IntakeLimits",
    "MalformedLine",
    "ReadResult",
    "UnsafeFileError",
    "checked_events_path",
    "emit",
    "emit_line",
    "events_file_for",
    "open_regular",
    "parse_lines",
    "read_agent_events",
    "read_bounded",
    "read_marker",
    "storable_payload",
    "topic_problem",
    "workspace_root",
    "write_marker",
]
