"""An invocation that ended on its provider's limit, as a fact (I/O: reads the invocation's
log and the machine's time zone)."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

from pipeline.events import AgentName, Instant, ProviderLimited, Role, UsageWindowReported
from pipeline.handlers.agents.limits import read_limit, read_window, text_limit
from pipeline.handlers.runtime._failures import is_rate_limited, last_line

__all__ = ["limit_of", "window_of"]


def limit_of(
    role: Role, agent: AgentName, output_format: str | None, log: Path, tail: bytes, at: Instant
) -> ProviderLimited | None:
    """``ProviderLimited`` when the invocation of ``agent`` in ``role`` (its output in
    ``log``, ending with ``tail``, colours removed) ended on its provider's limit: as its
    format's structured output says, or, for a format with none, as its last words do."""
    # A CLI names a reset as a time of day in the machine's zone ("try again at 9:21 PM").
    zone = datetime.now().astimezone().tzinfo
    assert zone is not None
    signal = read_limit(output_format, log, at, zone)
    if signal is None and is_rate_limited(tail):
        signal = text_limit(output_format, last_line(tail))
    if signal is None:
        return None
    resets_at = None if signal.resets_at is None else Instant(signal.resets_at)
    return ProviderLimited(
        role=role,
        agent=agent,
        scope=signal.scope,
        resets_at=resets_at,
        window=signal.window,
        source=signal.source,
        message=signal.message or last_line(tail),
        at=at,
    )


def window_of(
    role: Role, agent: AgentName, output_format: str | None, log: Path, at: Instant
) -> tuple[UsageWindowReported, ...]:
    """``UsageWindowReported`` when the invocation's output told how full its provider's
    usage windows are (the fullest one), else nothing."""
    found = read_window(output_format, log)
    if found is None:
        return ()
    resets_at = None if found.resets_at is None else Instant(found.resets_at)
    return (
        UsageWindowReported(
            role=role,
            agent=agent,
            window=found.window,
            utilization=found.utilization,
            resets_at=resets_at,
            at=at,
        ),
    )
