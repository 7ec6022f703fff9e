"""The ``gemini`` preset with the real Gemini CLI (pinned) against the scripted model server.

Gemini CLI is pointed at the server with ``GOOGLE_GEMINI_BASE_URL`` and a dummy
``GEMINI_API_KEY``; its home is a temporary folder whose ``~/.gemini/settings.json`` selects
the API-key auth and turns off usage statistics, telemetry, update checks and the IDE, so it
reads nothing of the person's own configuration and calls nothing but the server. A model is
named (``gemini-2.5-flash``): with none, Gemini CLI routes each request through a classifier
model first.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import attrs
import pytest

from pipeline.core.config import PRESETS
from tests.model_server import (
    ApiError,
    ModelReply,
    ModelRequest,
    ModelServer,
    Script,
    Shell,
    Usage,
    by_kind,
    fixing_pipeline,
    prompt_kind,
)
from tests.real_agents.repo import (
    FIXED_APP,
    PYTHON,
    assert_sandboxed,
    failing_repo,
    git,
    path_with,
    run_ralph,
    stored_events,
)

MODEL = "gemini-2.5-flash"

SETTINGS = {
    "security": {"auth": {"selectedType": "gemini-api-key"}},
    "privacy": {"usageStatisticsEnabled": False},
    "telemetry": {"enabled": False},
    "general": {"enableAutoUpdate": False, "enableAutoUpdateNotification": False},
    "ide": {"enabled": False},
}
"""``~/.gemini/settings.json``: the API key's auth (with a base URL alone Gemini CLI picks a
gateway auth headless mode refuses), and nothing that calls home."""


def gemini_env(
    home: Path, server: ModelServer, settings: Mapping[str, Any] = SETTINGS
) -> dict[str, str]:
    """The environment that points Gemini CLI at ``server`` with ``home`` as its home."""
    (home / ".gemini").mkdir(parents=True, exist_ok=True)
    (home / ".gemini" / "settings.json").write_text(json.dumps(settings))
    (home / "tmp").mkdir(exist_ok=True)
    return {
        # Gemini CLI writes a report of every failed API call to the temporary folder.
        "TMPDIR": str(home / "tmp"),
        "HOME": str(home),
        "XDG_CONFIG_HOME": str(home / ".config"),
        "XDG_CACHE_HOME": str(home / ".cache"),
        "XDG_DATA_HOME": str(home / ".local" / "share"),
        "XDG_STATE_HOME": str(home / ".local" / "state"),
        "GOOGLE_GEMINI_BASE_URL": server.url,
        "GEMINI_API_KEY": "scripted-model-dummy-key",
        # Gemini CLI otherwise starts a second Node process of itself with a larger heap,
        # loading everything twice (about a second of CPU per invocation); the argv test
        # keeps that launch, as a user gets it.
        "GEMINI_CLI_NO_RELAUNCH": "true",
    }


def with_usage(script: Script) -> Script:
    """``script`` reporting distinct usage figures on each request (cache reads included), so
    that a test can find the server's figures in what ralph recorded."""

    def scripted(request: ModelRequest) -> ModelReply:
        reply = script(request)
        usage = Usage(
            input_tokens=1000 + 10 * request.turn,
            output_tokens=50 + request.turn,
            cache_read_tokens=3000,
            cache_write_tokens=0,
        )
        return attrs.evolve(reply, usage=usage)

    return scripted


PRICE = {"input": 0.30, "output": 2.50, "cache_read": 0.03}
"""US dollars per million tokens: ``[prices."gemini-2.5-*"]`` (Gemini CLI reports no cost)."""

ROLES = {
    "planning": "planner",
    "development": "developer",
    "review": "reviewer",
    "commit_message": "committer",
}
"""The role that receives each of ralph's prompt kinds in a run without failures."""


def agent_toml(env: Mapping[str, str]) -> str:
    """``[agents.main]``: the gemini preset with ``env`` added to its environment, and the
    model's prices."""
    pairs = ", ".join(f"{key} = {json.dumps(value)}" for key, value in env.items())
    return (
        f'[agents.main]\npreset = "gemini"\nmodel = "{MODEL}"\nenv = {{ {pairs} }}\n\n'
        f'[prices."gemini-2.5-*"]\ninput_usd_per_mtok = {PRICE["input"]}\n'
        f"output_usd_per_mtok = {PRICE['output']}\n"
        f"cache_read_usd_per_mtok = {PRICE['cache_read']}\n"
    )


def served_usage(server: ModelServer) -> dict[str, list[Usage]]:
    """The usage the server reported to each role, one entry per model request."""
    served: dict[str, list[Usage]] = {}
    for exchange in server.exchanges:
        if exchange.request is None or exchange.reply is None:
            continue
        kind = prompt_kind(exchange.request.prompt)
        assert kind in ROLES, f"a request of no expected kind: {kind}"
        served.setdefault(ROLES[kind], []).append(exchange.reply.usage)
    return served


@pytest.mark.slow
def test_gemini_preset_fixes_the_failing_repository(
    tmp_path: Path, agent_cli: Callable[[str], Path]
) -> None:
    """``ralph run`` with the gemini preset plans, writes the fix with Gemini CLI's own
    ``write_file``, publishes ``build.done`` from its ``run_shell_command``, commits, reviews
    and validates: exit 0, the fix committed, the test passing; and every invocation's usage
    fact holds the tokens the server reported to it, priced from ``[prices]``."""
    program = agent_cli("gemini")
    with ModelServer(with_usage(by_kind(fixing_pipeline("app.py", FIXED_APP)))) as server:
        env = gemini_env(tmp_path / "home", server)
        root = failing_repo(tmp_path / "repo", agent_toml(env))
        done = run_ralph(root, {"PATH": path_with(program)}, "run", "--plain", timeout=300)
        requests = server.model_requests()
        served = served_usage(server)
    assert done.returncode == 0, done.stdout + done.stderr
    assert_sandboxed(root, server.url)
    assert git(root, "show", "HEAD:app.py") == FIXED_APP
    assert git(root, "status", "--porcelain", "--", "app.py") == ""
    tested = subprocess.run(
        [PYTHON, "-m", "unittest", "-q"], cwd=root, capture_output=True, check=False
    )
    assert tested.returncode == 0
    facts = stored_events(root)
    topics = [fact for fact in facts if fact["type"] == "agent.topic_published"]
    assert any(fact["topic"] == "build.done" for fact in topics), topics
    assert {request.model for request in requests} == {MODEL}
    assert all(request.offers("run_shell_command") for request in requests)
    assert all(request.offers("write_file") for request in requests)
    assert not [e for e in server.exchanges if e.status != 200], server.exchanges
    reported = {f["role"]: f for f in facts if f["type"] == "agent.usage_reported"}
    assert len(reported) == len([f for f in facts if f["type"] == "agent.usage_reported"])
    assert set(reported) == set(served) == set(ROLES.values())
    for role, usages in served.items():
        fact = reported[role]
        fresh = sum(u.input_tokens for u in usages)
        output = sum(u.output_tokens for u in usages)
        cached = sum(u.cache_read_tokens for u in usages)
        assert (fact["input_tokens"], fact["output_tokens"]) == (fresh, output), fact
        assert (fact["cache_read_tokens"], fact["cache_write_tokens"]) == (cached, None), fact
        assert fact["turns"] == len(usages), fact
        assert fact["model"] == MODEL
        assert fact["session_id"]
        assert fact["cost_source"] == "estimated"
        cost = fresh * PRICE["input"] + output * PRICE["output"] + cached * PRICE["cache_read"]
        assert fact["cost_usd"] == pytest.approx(cost / 1e6), fact


@pytest.mark.slow
def test_the_pinned_gemini_cli_accepts_the_presets_argv(
    tmp_path: Path, agent_cli: Callable[[str], Path]
) -> None:
    """The preset's argv, run in a folder nobody trusted (a fresh repository), is accepted:
    no usage error, no untrusted-folder refusal (exit 55), yolo kept (the shell tool ran),
    and stream-json output ending in a ``result`` line."""
    program = agent_cli("gemini")
    preset = PRESETS["gemini"]
    work = tmp_path / "work"
    work.mkdir()
    git(work, "init", "--quiet")

    def script(request: ModelRequest) -> ModelReply:
        if request.turn == 0:
            return ModelReply(actions=(Shell("echo ran > ran.txt"),))
        return ModelReply(text="Done.")

    with ModelServer(script) as server:
        env = {**os.environ, **gemini_env(tmp_path / "home", server)}
        env["PATH"] = path_with(program)
        del env["GEMINI_CLI_NO_RELAUNCH"]  # launched as a user launches it
        argv = [str(program), *preset.argv[1:], preset.model_flag, MODEL]
        done = subprocess.run(
            argv,
            cwd=work,
            env=env,
            input="Say hello.",
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "not running in a trusted directory" not in done.stderr
    assert (work / "ran.txt").read_text() == "ran\n"
    lines = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    assert lines[0]["type"] == "init"
    assert lines[-1]["type"] == "result"
    assert lines[-1]["status"] == "success"


@pytest.mark.slow
def test_a_rate_limit_reaches_ralph_as_a_limit_and_the_run_waits_for_its_reset(
    tmp_path: Path, agent_cli: Callable[[str], Path]
) -> None:
    """Every request answered 429 (Google's RESOURCE_EXHAUSTED, "Quota exceeded") with a
    retry-after of 1 s, Gemini CLI told to attempt once (``general.maxAttempts``; it would
    retry ten times over minutes): ralph reads a limit from Gemini CLI's error ``result``, with
    the reset it suggests, waits until then and tries again; with the agent's retries spent,
    the run stops for a person (exit 3), having used no tokens."""
    program = agent_cli("gemini")
    limited = ModelReply(
        error=ApiError(status=429, message="Quota exceeded for model", retry_after_s=1)
    )
    settings = {**SETTINGS, "general": {**SETTINGS["general"], "maxAttempts": 1}}
    with ModelServer(lambda request: limited) as server:
        env = gemini_env(tmp_path / "home", server, settings)
        root = failing_repo(tmp_path / "repo", agent_toml(env))
        done = run_ralph(root, {"PATH": path_with(program)}, "run", "--plain", timeout=300)
    assert done.returncode == 3, done.stdout + done.stderr
    facts = stored_events(root)
    limits = [f for f in facts if f["type"] == "agent.provider_limited"]
    assert len(limits) >= 2, done.stdout + done.stderr
    assert {(f["scope"], f["source"]) for f in limits} == {("usage_window", "gemini result error")}
    awaited = [f for f in facts if f["type"] == "agent.limit_reset_awaited"]
    assert [f["until"] for f in awaited] == [f["resets_at"] for f in limits[:-1]]
    assert all(f["at"] >= f["until"] for f in awaited)
    (stopped,) = [f for f in facts if f["type"] == "human.human_intervention_required"]
    assert stopped["reason"] == "PROVIDER_LIMIT"
    assert all(exchange.status == 429 for exchange in server.exchanges)
    usage = [fact for fact in facts if fact["type"] == "agent.usage_reported"]
    assert len(usage) == len(limits)
    assert {(f["input_tokens"], f["output_tokens"], f["turns"]) for f in usage} == {(0, 0, 0)}
