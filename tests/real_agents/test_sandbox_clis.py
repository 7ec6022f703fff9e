"""Each preset's real CLI (pinned) runs ralph's fixing pipeline inside the sandbox.

Every preset's own fixing-run setup (the environment helper of its ``test_*.py``), with
``[sandbox] mode = "required"`` added to ``ralph.toml``: the model server's ``127.0.0.1:PORT``
is derived from the CLI's own base-URL settings and relayed into the sandbox, and the run
completes. With ``network = "none"`` nothing is relayed and the server is never asked. What
each CLI then does, measured with the pinned versions:

- Claude Code exits 1 at once ("API Error: Connection refused ... (ECONNREFUSED)") and
  Gemini CLI exits 1 ("fetch failed sending request") once its own retries are spent (ten
  attempts over about three minutes; one here, through ``general.maxAttempts``). Both print
  usage figures, zeros.
- Codex waits for the network ("Reconnecting... waiting for network", again after 5, 10, 20
  seconds, without end), aider retries for over a minute ("The API provider's servers are
  down or overloaded") and OpenCode five times over about a minute ("Cannot connect to
  API"): ralph's timeouts end them (a few seconds here).

Whichever way, the start warns that the agent can reach nothing, and its failure or timeout
is said as the configuration's (the sandbox cut it off): not run again, no dev-fix (which
would run the same cut-off agents), the run stopped for a person.
"""

from __future__ import annotations

import contextlib
import subprocess
import time
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
from attrs import frozen

from tests.model_server import ModelServer, Script, by_kind, fixing_pipeline
from tests.real_agents.codex import codex_environment, codex_home, codex_sandbox
from tests.real_agents.repo import (
    FIXED_APP,
    failing_repo,
    git,
    path_with,
    run_ralph,
    stored_events,
)
from tests.real_agents.test_aider import MODEL as AIDER_MODEL
from tests.real_agents.test_aider import aider_env, all_at_once
from tests.real_agents.test_claude import claude_environment
from tests.real_agents.test_gemini import SETTINGS as GEMINI_SETTINGS
from tests.real_agents.test_gemini import agent_toml as gemini_agent_toml
from tests.real_agents.test_gemini import gemini_env
from tests.real_agents.test_opencode import AGENT_TOML as OPENCODE_AGENT
from tests.real_agents.test_opencode import opencode_env, opencode_sandbox

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("own_environment")]

REQUIRED = '\n[sandbox]\nmode = "required"\n'
NO_NETWORK = REQUIRED + 'network = "none"\n'
HINT = (
    "the sandbox lets this agent reach nothing ([sandbox] network is none), so it cannot reach "
    "its model"
)
OFFLINE_TIMEOUTS = "inactivity_timeout_s = 3\ntimeout_s = 6\n"
"""Codex, aider and OpenCode wait or retry for a minute or more when cut off: ended sooner."""


@frozen
class Setup:
    """One preset's fixing run: its agent tables for ``ralph.toml`` and the environment
    ``ralph run`` is given."""

    agent_toml: str
    env: Mapping[str, str]


@frozen
class Bench:
    """Where a preset's setup is made: a temporary folder, the running server, the CLI's
    program, whether the sandbox cuts it off, and a stack for what must be cleaned up."""

    tmp: Path
    server: ModelServer
    program: Path
    offline: bool
    stack: contextlib.ExitStack


def _claude(bench: Bench) -> Setup:
    env = claude_environment(bench.server.url, bench.tmp / "home", bench.program)
    return Setup('[agents.main]\npreset = "claude"\n', env)


def _codex(bench: Bench) -> Setup:
    timeouts = OFFLINE_TIMEOUTS if bench.offline else ""
    config = bench.stack.enter_context(codex_home())
    env = codex_environment(bench.tmp / "home", config, bench.server.url, bench.program)
    agent = f'[agents.main]\npreset = "codex"\nmodel = "scripted"\n{timeouts}'
    # its provider is in its own config.toml: allowed by hand, unless the network is off
    allowed = "" if bench.offline else codex_sandbox(bench.server.url)
    return Setup(agent + allowed, env)


def _gemini(bench: Bench) -> Setup:
    # Gemini CLI's own retries of a request that cannot get out take minutes: one attempt.
    general = {**GEMINI_SETTINGS["general"], "maxAttempts": 1}
    settings = {**GEMINI_SETTINGS, "general": general} if bench.offline else GEMINI_SETTINGS
    env = gemini_env(bench.tmp / "home", bench.server, settings)
    return Setup(gemini_agent_toml(env), {"PATH": path_with(bench.program)})


def _opencode(bench: Bench) -> Setup:
    timeouts = OFFLINE_TIMEOUTS if bench.offline else ""
    agent = OPENCODE_AGENT.replace("[agents.main]\n", f"[agents.main]\n{timeouts}", 1)
    env = opencode_env(bench.tmp / "home", bench.server.url, bench.program)
    allowed = "" if bench.offline else opencode_sandbox(bench.server.url)
    return Setup(agent + allowed, env)


def _aider(bench: Bench) -> Setup:
    env = aider_env(bench.tmp / "home", bench.server.url, bench.program)
    timeouts = OFFLINE_TIMEOUTS if bench.offline else ""
    return Setup(f'[agents.main]\npreset = "aider"\nmodel = "{AIDER_MODEL}"\n{timeouts}', env)


SETUPS: Mapping[str, Callable[[Bench], Setup]] = {
    "claude": _claude,
    "codex": _codex,
    "gemini": _gemini,
    "opencode": _opencode,
    "aider": _aider,
}
"""Each preset's fixing-run setup, built by the helpers its own real-agent test uses."""


def _script(preset: str) -> Script:
    """ralph's fixing pipeline; aider, which offers no tools, gets each role's files at once."""
    playbooks = fixing_pipeline("app.py", FIXED_APP)
    return by_kind(all_at_once(playbooks) if preset == "aider" else playbooks)


@frozen
class Ran:
    """A finished ``ralph run``: the repository, the process, what the server saw, the
    run's facts and how long it took."""

    root: Path
    done: subprocess.CompletedProcess[str]
    port: int
    statuses: tuple[int, ...]
    facts: list[dict[str, Any]]
    seconds: float


def _run(preset: str, tmp_path: Path, program: Path, sandbox: str) -> Ran:
    """The preset's fixing run with ``sandbox`` (a ``[sandbox]`` table) in ``ralph.toml``."""
    with ModelServer(_script(preset)) as server, contextlib.ExitStack() as stack:
        bench = Bench(tmp_path, server, program, "none" in sandbox, stack)
        setup = SETUPS[preset](bench)
        root = failing_repo(tmp_path / "repo", setup.agent_toml + sandbox)
        started = time.monotonic()
        done = run_ralph(root, setup.env, "run", "--plain", timeout=300)
        seconds = time.monotonic() - started
        statuses = tuple(exchange.status for exchange in server.exchanges)
        port = server.port
    print(f"{preset}: ralph run took {seconds:.1f}s")
    return Ran(root, done, port, statuses, stored_events(root), seconds)


def _of(ran: Ran, tag: str) -> list[dict[str, Any]]:
    return [fact for fact in ran.facts if fact["type"] == tag]


@contextlib.contextmanager
def _explained(ran: Ran) -> Iterator[None]:
    """Failed assertions show ralph's output and the agents' logs."""
    try:
        yield
    except AssertionError as error:
        logs = sorted((ran.root / ".ralph" / "runs").glob("*/logs/*.log"))
        tails = "".join(f"\n--- {log.name}\n{log.read_text()[-2000:]}" for log in logs)
        raise AssertionError(f"{error}\n{ran.done.stdout}{ran.done.stderr}{tails}") from None


def _stopped_for_the_configuration(ran: Ran) -> None:
    """The run stops for a person, the start having warned: the planner tried once, failed
    as the configuration's doing (no retry, no dev-fix), the server never asked, nothing
    committed."""
    assert ran.done.returncode == 3  # stopped for a person
    warning = " ".join(ran.done.stderr.split())
    assert "sandbox: agents.main" in warning
    assert "can reach nothing in the sandbox ([sandbox] network is none)" in warning
    assert ran.statuses == ()
    assert git(ran.root, "log", "--format=%s") == "A failing test\n"
    (checked,) = _of(ran, "lifecycle.sandbox_checked")
    assert (checked["on"], checked["endpoints"]) == (True, [])
    assert checked["said"].endswith("; network: none)")
    started = _of(ran, "agent.invocation_started")
    assert [(fact["role"], fact["attempt"]) for fact in started] == [("planner", 1)]
    (failed,) = _of(ran, "agent.invocation_failed")
    assert (failed["error"], failed["retriable"]) == ("configuration", False)
    assert failed["message"].endswith(HINT)
    assert not _of(ran, "agent.backoff_waited")
    assert not _of(ran, "agent.invocation_timed_out")
    assert "Exit status 3: human_intervention_required" in ran.done.stdout


@pytest.mark.parametrize("preset", ["claude", "gemini", "codex", "opencode", "aider"])
def test_a_cli_cut_off_by_the_sandbox_stops_the_run_saying_so(
    preset: str, tmp_path: Path, agent_cli: Callable[[str], Path]
) -> None:
    """With ``network = "none"`` no CLI can reach the server: whether it fails at once
    (Claude Code, Gemini CLI) or waits and retries until ralph's timeout ends it (Codex,
    aider, OpenCode), its one invocation is said to have been cut off by the sandbox, and
    the run stops for a person instead of retrying or running dev-fix."""
    ran = _run(preset, tmp_path, agent_cli(preset), NO_NETWORK)
    with _explained(ran):
        _stopped_for_the_configuration(ran)
