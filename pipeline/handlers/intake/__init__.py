"""Agent event intake: the run's events file, its marker, and ``emit`` (I/O)."""

from pipeline.handlers.intake._emit import TOPIC_PATTERN, EmitError, emit, emit_line
from pipeline.handlers.intake._facts import read_agent_events, storable_payload
from pipeline.handlers.intake._files import (
    DEFAULT_EVENTS_FILE,
    MARKER,
    EventsFileError,
    checked_events_path,
    events_file_for,
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
    "DEFAULT_EVENTS_FILE",
    "MARKER",
    "TOPIC_PATTERN",
    "AgentLine",
    "EmitError",
    "EventsFileError",
    "EventsFileReader",
    "MalformedLine",
    "ReadResult",
    "checked_events_path",
    "emit",
    "emit_line",
    "events_file_for",
    "parse_lines",
    "read_agent_events",
    "read_marker",
    "storable_payload",
    "workspace_root",
    "write_marker",
]
