"""Provider limits read from what the pinned agent CLIs really printed when the scripted model
server limited them (``tests/fixtures/limits``, captured by running each CLI; see
``docs/research/provider-limits.md``), and never from what a tool or the model said."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import pytest

from pipeline.events import LimitScope
from pipeline.handlers.agents.limits import LimitSignal, read_limit, read_window, text_limit

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "limits"
NOW = datetime(2026, 11, 26, 18, 14, 30, tzinfo=UTC)
EAST = timezone(timedelta(hours=2))


def _read(name: str, zone: timezone = UTC) -> LimitSignal | None:
    fmt = {
        "claude": "claude-stream-json",
        "codex": "codex-json",
        "gemini": "gemini-stream-json",
        "opencode": "opencode-json",
    }
    return read_limit(fmt[name.split("-")[0]], FIXTURES / name, NOW, zone)


@pytest.mark.parametrize(
    ("fixture", "source"),
    [
        ("claude-429.jsonl", "claude result api_error_status 429"),
        ("claude-529.jsonl", "claude result api_error_status 529"),
        ("claude-503.jsonl", "claude result api_error_status 503"),
        ("codex-429.jsonl", "codex turn.failed"),
        ("codex-503.jsonl", "codex turn.failed"),
        ("gemini-503.jsonl", "gemini result error"),
        ("opencode-503.jsonl", "opencode error statusCode 503"),
    ],
)
def test_a_rate_limit_or_an_overloaded_provider_is_a_limit_on_requests(
    fixture: str, source: str
) -> None:
    found = _read(fixture)
    assert found is not None
    assert (found.scope, found.resets_at, found.source) == (LimitScope.REQUESTS, None, source)
    assert found.message


def test_claudes_rejected_usage_window_names_the_window_and_its_reset() -> None:
    five = _read("claude-429-unified-rejected.jsonl")
    assert five is not None
    assert (five.scope, five.window, five.source) == (
        LimitScope.USAGE_WINDOW,
        "five_hour",
        "claude rate_limit_event",
    )
    assert five.resets_at == datetime.fromtimestamp(1795727676, UTC)
    assert five.message == "You've hit your 5-hour limit · resets 9:14pm (UTC)"
    week = _read("claude-429-unified-rejected-weekly.jsonl")
    assert week is not None
    assert (week.window, week.resets_at) == ("seven_day", datetime.fromtimestamp(1795900478, UTC))


@pytest.mark.parametrize(
    "fixture",
    ["claude-unified-warning.jsonl", "claude-unified-allowed.jsonl", "claude-429-then-ok.jsonl"],
)
def test_a_run_that_went_on_is_no_limit_whatever_the_window_said(fixture: str) -> None:
    assert _read(fixture) is None


def test_a_delay_the_cli_gives_is_the_reset() -> None:
    codex = _read("codex-429-in-stream.jsonl")
    assert codex is not None
    assert (codex.scope, codex.resets_at) == (LimitScope.REQUESTS, NOW + timedelta(seconds=2))
    gemini = _read("gemini-429-retry-after-long.jsonl")
    assert gemini is not None
    assert gemini.resets_at == NOW + timedelta(seconds=900)
    opencode = _read("opencode-429.jsonl")
    assert opencode is not None
    assert (opencode.scope, opencode.resets_at, opencode.source) == (
        LimitScope.REQUESTS,
        NOW + timedelta(seconds=2),
        "opencode error statusCode 429",
    )


def test_codexs_usage_limit_resets_at_the_time_of_day_it_names_in_the_machines_zone() -> None:
    """ "try again at 9:21 PM": 21:21 in the machine's zone, today or, once past, tomorrow."""
    here = _read("codex-429-usage-limit.jsonl", EAST)
    assert here is not None
    assert here.scope is LimitScope.USAGE_WINDOW
    assert here.resets_at == datetime(2026, 11, 26, 21, 21, tzinfo=EAST)
    late = read_limit(
        "codex-json", FIXTURES / "codex-429-usage-limit.jsonl", NOW + timedelta(hours=2), EAST
    )
    assert late is not None
    assert late.resets_at == datetime(2026, 11, 27, 21, 21, tzinfo=EAST)


def test_a_quota_is_a_usage_window_with_no_reset_told() -> None:
    for fixture in ("codex-429-insufficient-quota.jsonl", "gemini-429-per-day.jsonl"):
        found = _read(fixture)
        assert found is not None, fixture
        assert (found.scope, found.resets_at) == (LimitScope.USAGE_WINDOW, None)


def _claude_lines(tool_output: str, *, is_error: bool, status: int | None) -> list[str]:
    return [
        json.dumps({"type": "system", "subtype": "init", "session_id": "s"}),
        json.dumps(
            {
                "type": "user",
                "message": {
                    "content": [
                        {"type": "tool_result", "tool_use_id": "t1", "content": tool_output}
                    ]
                },
            }
        ),
        json.dumps(
            {"type": "assistant", "message": {"content": [{"type": "text", "text": tool_output}]}}
        ),
        json.dumps(
            {
                "type": "result",
                "is_error": is_error,
                "api_error_status": status,
                "result": "Error: tests failed",
            }
        ),
    ]


@pytest.mark.parametrize(("is_error", "status"), [(False, None), (True, None), (True, 500)])
def test_words_a_tool_printed_are_never_a_limit(
    tmp_path: Path, is_error: bool, status: int | None
) -> None:
    """A file the agent printed that says "usage limit", "429" and "rate limit", and the
    model repeating it, read as no limit, whether the invocation succeeded or failed."""
    printed = "You've hit your usage limit (HTTP 429 Too Many Requests: rate limit, quota)."
    log = tmp_path / "claude.log"
    log.write_text("\n".join(_claude_lines(printed, is_error=is_error, status=status)) + "\n")
    assert read_limit("claude-stream-json", log, NOW, UTC) is None
    codex = tmp_path / "codex.log"
    item = {"type": "item.completed", "item": {"type": "command_execution", "output": printed}}
    codex.write_text(json.dumps(item) + "\n" + json.dumps({"type": "turn.completed"}) + "\n")
    assert read_limit("codex-json", codex, NOW, UTC) is None


def test_only_a_format_without_structure_is_read_for_words() -> None:
    assert text_limit("claude-stream-json", "rate limit") is None
    for fmt in (None, "aider"):
        found = text_limit(fmt, "The API provider's servers are down or overloaded.")
        assert found is not None
        assert (found.scope, found.source) == (LimitScope.REQUESTS, "output text")


def test_an_unreadable_log_or_an_unknown_format_tells_nothing(tmp_path: Path) -> None:
    assert read_limit("claude-stream-json", tmp_path / "missing.log", NOW, UTC) is None
    assert read_limit("opencode-json", FIXTURES / "claude-429.jsonl", NOW, UTC) is None
    assert read_limit("aider", FIXTURES / "claude-429.jsonl", NOW, UTC) is None
    assert read_limit(None, FIXTURES / "claude-429.jsonl", NOW, UTC) is None


def test_claudes_fullest_usage_window_is_read_from_its_last_rate_limit_event() -> None:
    warned = read_window("claude-stream-json", FIXTURES / "claude-unified-warning.jsonl")
    assert warned is not None
    assert (warned.window, warned.utilization) == ("five_hour", 0.91)
    assert warned.resets_at == datetime.fromtimestamp(1795727674, UTC)
    allowed = read_window("claude-stream-json", FIXTURES / "claude-unified-allowed.jsonl")
    assert allowed is not None
    assert (allowed.window, allowed.utilization) == ("five_hour", 0.3)
    assert read_window("claude-stream-json", FIXTURES / "claude-429.jsonl") is None
    assert read_window("codex-json", FIXTURES / "claude-unified-warning.jsonl") is None
