"""What each pinned agent CLI prints when its model provider limits it: capture it again.

Each case runs one CLI directly (not through ralph) with its preset's argv, headless, in a
fresh git repository, against the scripted model server answering every request (or the
first ones) with a rate limit or an overload, and keeps what it printed (stdout and stderr
merged, as ralph's log file merges them) as ``tests/fixtures/limits/<cli>-<case>.jsonl``
(``.txt`` for aider, which prints no JSON). The temporary folder's path is replaced by
``/TMP`` and the CLI cache's by ``/AGENT_CLIS``; nothing else is changed.
``docs/research/provider-limits.md`` reads these.

``python -m tests.real_agents.limits SCRATCH [CLI | CLI-CASE ...]`` captures the named cases
(all by default) and prints, per case, the exit code, the time taken and the requests the
server saw (second from the start, path, status). The CLIs must be installed
(``python -m tests.agent_clis install``).
"""

from __future__ import annotations

import base64
import json
import os
import re
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

import attrs
from attrs import field, frozen

from pipeline.core.config import PRESETS
from tests.agent_clis import cache_dir, install
from tests.model_server import (
    ApiError,
    ModelReply,
    ModelRequest,
    ModelServer,
    Script,
)
from tests.real_agents.codex import codex_environment, codex_home
from tests.real_agents.repo import git, path_with

FIXTURES = Path(__file__).parent.parent / "fixtures" / "limits"
PROMPT = "Write hello.txt containing hi.\n"


@frozen
class Case:
    """One CLI run: its fixture name, the script, and what is changed from the defaults."""

    cli: str
    name: str
    script: Script
    env: Mapping[str, str | None] = field(factory=dict)
    """Variables added to the CLI's test environment (None: removed from it)."""
    settings: Mapping[str, object] = field(factory=dict)
    """gemini: ``general`` settings added; codex: provider keys replacing the test config's."""
    timeout_s: float = 240.0

    @property
    def fixture(self) -> str:
        return f"{self.cli}-{self.name}.{'txt' if self.cli == 'aider' else 'jsonl'}"


@frozen
class Run:
    """What one case did: exit code (None: killed at the timeout), seconds, output, and each
    request the server saw (seconds from the CLI's start, path, status)."""

    returncode: int | None
    seconds: float
    output: bytes
    requests: tuple[tuple[float, str, int], ...]


def always(error: ApiError, headers: Mapping[str, str] | None = None) -> Script:
    """Every request answered with ``error`` (and ``headers``)."""
    reply = ModelReply(error=error, headers=dict(headers or {}))
    return lambda request: reply


DONE = ModelReply(text="Done.")


def first(count: int, error: ApiError, then: ModelReply = DONE) -> Script:
    """The first ``count`` requests answered with ``error``, every later one with ``then``."""
    seen = [0]
    lock = threading.Lock()

    def script(request: ModelRequest) -> ModelReply:
        with lock:
            seen[0] += 1
            number = seen[0]
        return ModelReply(error=error) if number <= count else then

    return script


def gateway_token() -> str:
    """An unsigned JWT whose audience is ``claude-gateway``: with a base URL of its own, Claude
    Code then reads the ``anthropic-ratelimit-unified-*`` headers as it does for a Claude
    subscription (an API key alone does not; the pinned bundle's ``eQn`` gate)."""

    def part(value: object) -> str:
        return base64.urlsafe_b64encode(json.dumps(value).encode()).rstrip(b"=").decode()

    return f"{part({'alg': 'none', 'typ': 'JWT'})}.{part({'aud': 'claude-gateway'})}.c2ln"


def unified(status: str, reset: int, claim: str = "five_hour", **more: str) -> dict[str, str]:
    """``anthropic-ratelimit-unified-*`` headers: the overall ``status``, its ``reset`` (epoch
    seconds), the representative claim, and ``more`` (``5h_utilization="0.91"`` becomes
    ``anthropic-ratelimit-unified-5h-utilization``)."""
    headers = {
        "anthropic-ratelimit-unified-status": status,
        "anthropic-ratelimit-unified-reset": str(reset),
        "anthropic-ratelimit-unified-representative-claim": claim,
    }
    for key, value in more.items():
        headers[f"anthropic-ratelimit-unified-{key.replace('_', '-')}"] = value
    return headers


# --- running one CLI -------------------------------------------------------------------------


def _run(
    argv: Sequence[str],
    cwd: Path,
    env: Mapping[str, str | None],
    stdin: bytes | None,
    timeout: float,
) -> tuple[int | None, float, bytes]:
    inherited = {
        name: value
        for name, value in os.environ.items()
        if not name.startswith(("ANTHROPIC_", "CLAUDE_")) and name != "IS_SANDBOX"
    }
    # PWD is the case's folder too: OpenCode takes its project from PWD before its cwd.
    merged = {
        name: value
        for name, value in {**inherited, "PWD": str(cwd), **env}.items()
        if value is not None
    }
    started = time.monotonic()
    process = subprocess.Popen(
        argv,
        cwd=cwd,
        env=merged,
        stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        output, _ = process.communicate(stdin, timeout=timeout)
        code: int | None = process.returncode
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, 9)
        output, _ = process.communicate()
        code = None
    return code, time.monotonic() - started, output


def _environment(
    case: Case, root: Path, server: ModelServer, program: Path
) -> tuple[dict[str, str | None], list[str]]:
    """The CLI's test environment, and the argv after the program."""
    home = root / "home"
    preset = PRESETS[case.cli]
    argv = list(preset.argv[1:])
    if case.cli == "claude":
        from tests.real_agents.test_claude import claude_environment

        env = claude_environment(server.url, home, program)
    elif case.cli == "gemini":
        from tests.real_agents.test_gemini import MODEL, SETTINGS, gemini_env

        general = {**SETTINGS["general"], **case.settings}  # type: ignore[dict-item]
        settings = {**SETTINGS, "general": general}
        env = {**gemini_env(home, server, settings), "PATH": path_with(program)}
        argv += [preset.model_flag, MODEL]
    elif case.cli == "opencode":
        from tests.real_agents.test_opencode import opencode_env

        env = opencode_env(home, server.url, program)
    elif case.cli == "aider":
        from tests.real_agents.test_aider import MODEL as AIDER_MODEL
        from tests.real_agents.test_aider import aider_env

        env = aider_env(home, server.url, program)
        prompt = root / "prompt.md"
        prompt.write_text(PROMPT)
        argv = [a.replace("{prompt_file}", str(prompt)) for a in argv]
        argv += ["--model", AIDER_MODEL]
    else:
        raise ValueError(case.cli)
    return {**env, **case.env}, argv


def run_case(case: Case, root: Path) -> Run:
    """Run ``case`` in a fresh repository under ``root``."""
    program = install(case.cli)
    shutil.rmtree(root, ignore_errors=True)
    workspace = root / "workspace"
    workspace.mkdir(parents=True)
    git(workspace, "init", "--quiet")
    seen: list[tuple[float, str]] = []
    started = time.monotonic()

    def script(request: ModelRequest) -> ModelReply:
        seen.append((time.monotonic() - started, request.model))
        return case.script(request)

    with ModelServer(script) as server:
        stdin: bytes | None = PROMPT.encode()
        if case.cli == "codex":
            with codex_home() as config:
                codex_env = codex_environment(root / "home", config, server.url, program)
                if case.settings:
                    text = (config / "config.toml").read_text()
                    for key, value in case.settings.items():
                        text = re.sub(rf"(?m)^{key} = .*$", f"{key} = {value}", text)
                    (config / "config.toml").write_text(text)
                argv = [str(program), *PRESETS["codex"].argv[1:]]
                started = time.monotonic()
                code, seconds, output = _run(
                    argv, workspace, {**codex_env, **case.env}, stdin, case.timeout_s
                )
        else:
            env, rest = _environment(case, root, server, program)
            if case.cli == "aider":
                stdin = None
            started = time.monotonic()
            code, seconds, output = _run(
                [str(program), *rest], workspace, env, stdin, case.timeout_s
            )
        exchanges = server.exchanges
    times = iter(seen)
    requests = tuple(
        (round(next(times)[0], 2) if e.request is not None else -1.0, e.path, e.status)
        for e in exchanges
    )
    return Run(code, seconds, output, requests)


def scrub(output: bytes, root: Path) -> bytes:
    """``output`` without the temporary folder's path (``/TMP``) or the CLI cache's
    (``/AGENT_CLIS``: Gemini CLI's stack traces name its bundle's files)."""
    return output.replace(str(root).encode(), b"/TMP").replace(
        str(cache_dir()).encode(), b"/AGENT_CLIS"
    )


# --- the cases -------------------------------------------------------------------------------

LIMITED = ApiError(status=429, message="Rate limit reached for requests.", retry_after_s=2)
OVERLOADED = ApiError(status=529, message="Overloaded")
UNAVAILABLE = ApiError(status=503, message="The model is overloaded. Please try again later.")
QUOTA = ApiError(
    status=429,
    message="You exceeded your current quota, please check your plan and billing details.",
    retry_after_s=2,
)
OPENAI_QUOTA = {"type": "insufficient_quota", "code": "insufficient_quota"}
"""The error object's own fields when an OpenAI account's quota (billing) is spent."""

GOOGLE_QUOTA = (
    "You exceeded your current quota, please check your plan and billing details.\n"
    "* Quota exceeded for metric: generativelanguage.googleapis.com/"
    "generate_content_free_tier_requests, limit: 250, model: gemini-2.5-flash"
)
"""The message of the Gemini API's free-tier quota error (its delay is added per case)."""


def google_quota(window: str, delay_s: int) -> dict[str, object]:
    """The ``details`` of the Gemini API's quota error: the quota that was exceeded (its id
    ending ``PerMinute...`` or ``PerDay...``) and the ``RetryInfo`` delay."""
    quota_id = f"GenerateRequests{window}PerProjectPerModel-FreeTier"
    return {
        "details": [
            {
                "@type": "type.googleapis.com/google.rpc.QuotaFailure",
                "violations": [
                    {
                        "quotaMetric": "generativelanguage.googleapis.com/"
                        "generate_content_free_tier_requests",
                        "quotaId": quota_id,
                        "quotaDimensions": {"location": "global", "model": "gemini-2.5-flash"},
                        "quotaValue": "250",
                    }
                ],
            },
            {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": f"{delay_s}s"},
        ]
    }


def _cases() -> list[Case]:
    reset = int(time.time()) + 3 * 3600  # epoch seconds, 3 hours on
    gateway = {"ANTHROPIC_AUTH_TOKEN": gateway_token(), "ANTHROPIC_API_KEY": None}
    no_retry = {"CLAUDE_CODE_MAX_RETRIES": "0"}
    warn = unified(
        "allowed_warning",
        reset,
        **{
            "5h_status": "allowed_warning",
            "5h_utilization": "0.91",
            "5h_reset": str(reset),
            "5h_surpassed_threshold": "0.9",
            "7d_status": "allowed",
            "7d_utilization": "0.4",
            "7d_reset": str(reset + 4 * 86400),
        },
    )
    rejected = unified(
        "rejected",
        reset,
        **{
            "5h_status": "rejected",
            "5h_utilization": "1.0",
            "5h_reset": str(reset),
            "7d_status": "allowed",
            "7d_utilization": "0.6",
            "7d_reset": str(reset + 4 * 86400),
            "overage_status": "rejected",
            "overage_disabled_reason": "out_of_credits",
        },
    )
    weekly = unified(
        "rejected",
        reset + 2 * 86400,
        claim="seven_day",
        **{
            "7d_status": "rejected",
            "7d_utilization": "1.0",
            "7d_reset": str(reset + 2 * 86400),
            "5h_status": "allowed",
            "5h_utilization": "0.2",
            "5h_reset": str(reset),
        },
    )
    allowed = unified(
        "allowed",
        reset,
        **{
            "5h_status": "allowed",
            "5h_utilization": "0.3",
            "5h_reset": str(reset),
            "7d_status": "allowed",
            "7d_utilization": "0.1",
            "7d_reset": str(reset + 4 * 86400),
        },
    )
    later = reset + 2 * 86400
    usage_limit = ApiError(
        status=429,
        message="The usage limit has been reached",
        fields={"type": "usage_limit_reached", "plan_type": "plus", "resets_at": reset},
    )
    codex_windows = {
        "x-codex-primary-used-percent": "91.0",
        "x-codex-primary-window-minutes": "300",
        "x-codex-primary-reset-at": str(reset),
        "x-codex-primary-reset-after-seconds": str(3 * 3600),
        "x-codex-secondary-used-percent": "40.0",
        "x-codex-secondary-window-minutes": "10080",
        "x-codex-secondary-reset-at": str(reset + 4 * 86400),
        "x-codex-secondary-reset-after-seconds": str(3 * 3600 + 4 * 86400),
    }
    per_minute = ApiError(
        status=429,
        message=GOOGLE_QUOTA + "\nPlease retry in 2.5s.",
        fields=google_quota("PerMinute", 2),
    )
    per_day = ApiError(
        status=429,
        message=GOOGLE_QUOTA + "\nPlease retry in 35.5s.",
        fields=google_quota("PerDay", 35),
    )
    return [
        # Claude Code
        Case(
            "claude",
            "429-default-retries",
            always(LIMITED),
            env={"CLAUDE_CODE_MAX_RETRIES": None},
            timeout_s=400,
        ),
        Case("claude", "429", always(LIMITED)),
        Case("claude", "429-no-retry", always(LIMITED), env=no_retry),
        Case("claude", "529", always(OVERLOADED)),
        Case("claude", "503", always(UNAVAILABLE)),
        Case("claude", "429-then-ok", first(1, LIMITED)),
        Case(
            "claude",
            "429-unified-rejected-apikey",
            always(LIMITED, rejected),
            env=no_retry,
        ),
        Case(
            "claude",
            "unified-warning-apikey",
            lambda request: ModelReply(text="Done.", headers=warn),
        ),
        Case(
            "claude",
            "unified-warning",
            lambda request: ModelReply(text="Done.", headers=warn),
            env=gateway,
        ),
        Case(
            "claude",
            "429-unified-rejected",
            always(LIMITED, rejected),
            env={**gateway, **no_retry},
        ),
        Case(
            "claude",
            "429-unified-rejected-weekly",
            always(LIMITED, weekly),
            env={**gateway, **no_retry},
        ),
        Case(
            "claude",
            "429-unified-rejected-default-retries",
            always(ApiError(status=429, message=LIMITED.message, retry_after_s=3 * 3600), rejected),
            env={**gateway, "CLAUDE_CODE_MAX_RETRIES": None},
            timeout_s=120,
        ),
        Case(
            "claude",
            "429-long-retry-after-default-retries",
            always(ApiError(status=429, message=LIMITED.message, retry_after_s=3600)),
            env={"CLAUDE_CODE_MAX_RETRIES": None},
            timeout_s=120,
        ),
        Case(
            "claude",
            "unified-allowed",
            lambda request: ModelReply(text="Done.", headers=allowed),
            env=gateway,
        ),
        # Codex
        Case("codex", "429", always(LIMITED)),
        Case(
            "codex",
            "429-default-retries",
            always(LIMITED),
            settings={"request_max_retries": 4, "stream_max_retries": 5},
            timeout_s=400,
        ),
        Case(
            "codex",
            "429-no-retry-after",
            always(ApiError(status=429, message=LIMITED.message)),
            settings={"request_max_retries": 4, "stream_max_retries": 5},
        ),
        Case("codex", "503", always(UNAVAILABLE)),
        Case(
            "codex",
            "429-in-stream",
            always(ApiError(status=200, message="Rate limit reached.", retry_after_s=2)),
        ),
        Case(
            "codex",
            "429-insufficient-quota",
            always(attrs.evolve(QUOTA, fields=OPENAI_QUOTA)),
        ),
        Case("codex", "429-usage-limit", always(usage_limit)),
        Case(
            "codex",
            "429-usage-limit-days",
            always(attrs.evolve(usage_limit, fields={**usage_limit.fields, "resets_at": later})),
        ),
        Case("codex", "429-usage-limit-in-stream", always(attrs.evolve(usage_limit, status=200))),
        Case(
            "codex",
            "usage-headers",
            lambda request: ModelReply(text="Done.", headers=codex_windows),
        ),
        # Gemini CLI
        Case("gemini", "429", always(LIMITED), settings={"maxAttempts": 2}),
        Case("gemini", "429-one-attempt", always(LIMITED), settings={"maxAttempts": 1}),
        Case("gemini", "503", always(UNAVAILABLE), settings={"maxAttempts": 2}),
        Case("gemini", "429-per-minute", always(per_minute), settings={"maxAttempts": 2}),
        Case("gemini", "429-per-day", always(per_day), settings={"maxAttempts": 2}),
        Case(
            "gemini",
            "429-retry-after-long",
            always(attrs.evolve(LIMITED, retry_after_s=900)),
            settings={"maxAttempts": 2},
        ),
        Case("gemini", "429-default-attempts", always(LIMITED), timeout_s=400),
        # OpenCode
        Case("opencode", "429", always(LIMITED), timeout_s=150),
        Case("opencode", "503", always(UNAVAILABLE), timeout_s=150),
        # aider
        Case("aider", "429", always(LIMITED), timeout_s=150),
        Case("aider", "503", always(UNAVAILABLE), timeout_s=150),
    ]


def capture(scratch: Path, names: Sequence[str] = (), folder: Path = FIXTURES) -> None:
    """Run the cases named ``<cli>-<case>`` (or every case) and keep their output."""
    folder.mkdir(parents=True, exist_ok=True)
    for case in _cases():
        if names and f"{case.cli}-{case.name}" not in names and case.cli not in names:
            continue
        root = scratch / f"{case.cli}-{case.name}"
        run = run_case(case, root)
        (folder / case.fixture).write_bytes(scrub(run.output, root))
        summary = {
            "case": f"{case.cli}-{case.name}",
            "exit": run.returncode,
            "seconds": round(run.seconds, 1),
            "requests": run.requests,
        }
        print(json.dumps(summary), flush=True)


if __name__ == "__main__":
    capture(Path(sys.argv[1]), sys.argv[2:])
