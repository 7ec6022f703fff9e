"""Each pinned agent CLI drives ralph through its MCP server, in the sandbox, for real.

``ralph run`` with the preset of Claude Code, Codex, Gemini CLI or OpenCode (each set up as
its own real-agent test sets it up, in the sandbox: on by default) against the scripted model
server, whose model calls ralph's tools by the name that CLI gives them (:class:`McpCall`):
the developer fixes ``app.py``, publishes ``build.done`` with the ``emit`` tool and asks the
person with ``ask_person``. The run records the topic and the question exactly as it does for
``ralph emit``, waits, and ``ralph respond`` answers; the next developer prompt carries the
answer, and the run completes.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pytest

from pipeline.core.state import PendingQuestion
from pipeline.engine import load_state
from pipeline.handlers.runtime import WorkspaceLayout
from pipeline.handlers.store import SqliteEventStore
from tests.model_server import (
    McpCall,
    ModelReply,
    ModelRequest,
    ModelServer,
    Playbook,
    Script,
    Shell,
    WriteFile,
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
    run_ralph,
    stored_events,
)
from tests.real_agents.test_sandbox_clis import SETUPS, Bench

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("own_environment")]

QUESTION = "Which database should the app use?"
ANSWER = "Use PostgreSQL 17"
TOOL_NAMES = {
    "claude": "mcp__ralph__emit",
    "codex": "emit",  # in the namespace mcp__ralph
    "gemini": "mcp_ralph_emit",
    "opencode": "ralph_emit",
}
"""How each CLI offers ralph's ``emit`` tool to its model."""


def _asking_script() -> Script:
    """ralph's fixing pipeline whose developer publishes and asks through ralph's tools, one
    action a turn, and reports partial; given the answer, it reports completed."""
    fixing = by_kind(fixing_pipeline("app.py", FIXED_APP))
    asking = Playbook(
        steps=(
            ModelReply(actions=(WriteFile(path="app.py", content=FIXED_APP),)),
            ModelReply(
                actions=(
                    McpCall(tool="emit", arguments={"topic": "build.done", "payload": "fixed"}),
                )
            ),
            ModelReply(actions=(McpCall(tool="ask_person", arguments={"question": QUESTION}),)),
            ModelReply(actions=(WriteFile(path=".agent/out/status", content="partial\nAsked.\n"),)),
        )
    )
    answered = Playbook(
        steps=(
            ModelReply(
                actions=(WriteFile(path=".agent/out/status", content="completed\nFixed.\n"),)
            ),
        )
    )

    def script(request: ModelRequest) -> ModelReply:
        if prompt_kind(request.prompt) != "development":
            return fixing(request)
        return (answered if ANSWER in request.prompt else asking).reply(request.turn)

    return script


def _waiting_question(root: Path, process: subprocess.Popen[bytes]) -> PendingQuestion:
    """The question the run in ``root`` waits on, once its log shows it asked."""
    deadline = time.monotonic() + 240
    store_path = WorkspaceLayout(root=root).store
    while time.monotonic() < deadline and process.poll() is None:
        if store_path.is_file():
            with SqliteEventStore(store_path) as store:
                runs = store.runs()
                if runs:
                    question = load_state(store, runs[-1].run_id)[0].ledger.pending_question
                    if question is not None and question.asked:
                        return question
        time.sleep(0.2)
    raise AssertionError(f"no question was asked (ralph run exited {process.poll()})")


def _explain(root: Path, output: Path) -> str:
    """ralph's output and the tail of each agent's log, for a failed assertion."""
    logs = sorted((root / ".ralph" / "runs").glob("*/logs/*.log"))
    tails = "".join(f"\n--- {log.name}\n{log.read_text()[-3000:]}" for log in logs)
    return output.read_text() + tails


def _published_and_asked_through_mcp(
    preset: str, tmp_path: Path, program: Path, committed: Mapping[str, str] | None = None
) -> None:
    """The run of the module's docstring with ``preset``, and every check of it;
    ``committed`` files (path: text) are in the repository's first commit."""
    output = tmp_path / "ralph-run.txt"
    with ModelServer(_asking_script()) as server, contextlib.ExitStack() as stack:
        setup = SETUPS[preset](Bench(tmp_path, server, program, False, stack))
        root = failing_repo(tmp_path / "repo", setup.agent_toml)
        for path, text in (committed or {}).items():
            (root / path).parent.mkdir(parents=True, exist_ok=True)
            (root / path).write_text(text)
            git(root, "add", path)
        if committed:
            git(root, "commit", "--quiet", "-m", "The project's own agent settings")
        with output.open("wb") as sink:
            process = subprocess.Popen(
                [PYTHON, "-m", "pipeline.app.cli", "run", "--plain", "-C", str(root)],
                env={**os.environ, **setup.env},
                stdout=sink,
                stderr=subprocess.STDOUT,
            )
        try:
            try:
                question = _waiting_question(root, process)
            except AssertionError as error:
                raise AssertionError(f"{error}\n{_explain(root, output)}") from None
            answered = run_ralph(root, {}, "respond", ANSWER, "--question", question.question_id)
            assert answered.returncode == 0, answered.stdout + answered.stderr
            process.wait(timeout=300)
        finally:
            process.kill()
            process.wait()
        requests = server.model_requests()
    assert process.returncode == 0, _explain(root, output)
    assert_sandboxed(root, server.url)
    assert question.question == QUESTION
    developing = [r for r in requests if prompt_kind(r.prompt) == "development"]
    # ralph's tools are offered on the first turn (Claude Code's alwaysLoad: no tool search).
    first = developing[0]
    assert first.turn == 0
    assert TOOL_NAMES[preset] in [tool.name for tool in first.tools], first.tools
    # The model read the tools' own answers (Codex puts its wall time before them): the
    # topic and the question went through MCP.
    results = [r.last_tool_result or "" for r in developing]
    assert any("Published build.done." in result for result in results), results
    assert any("Asked. ralph asks the person" in result for result in results), results
    facts = stored_events(root)
    topics = [(f["topic"], f["payload"]) for f in _of(facts, "agent.topic_published")]
    assert ("build.done", "fixed") in topics, topics
    assert ("human.interact", {"question": QUESTION}) in topics, topics
    (asked,) = _of(facts, "human.human_question_asked")
    assert asked["question"] == QUESTION
    (response,) = _of(facts, "human.human_response_received")
    assert response["text"] == ANSWER
    # The answer came in the next developer prompt, which the model then finished.
    assert f"- `human.response`: {ANSWER}" in developing[-1].prompt
    assert (root / "app.py").read_text() == FIXED_APP
    assert git(root, "show", "HEAD:app.py") == FIXED_APP


def _of(facts: list[dict[str, Any]], tag: str) -> list[dict[str, Any]]:
    return [fact for fact in facts if fact["type"] == tag]


def test_claude_code_publishes_and_asks_through_mcp_and_the_run_waits_for_the_answer(
    tmp_path: Path, agent_cli: Callable[[str], Path]
) -> None:
    """Claude Code calls ``mcp__ralph__emit`` and ``mcp__ralph__ask_person`` (offered on its
    first turn): the log holds the topic and the question as from ``ralph emit``, the run
    waits, ``ralph respond`` answers, and the next prompt carries the answer."""
    _published_and_asked_through_mcp("claude", tmp_path, agent_cli("claude"))


def test_codex_publishes_and_asks_through_mcp(
    tmp_path: Path, agent_cli: Callable[[str], Path]
) -> None:
    """Codex calls ``emit`` and ``ask_person`` in its namespace ``mcp__ralph``, and the run
    records, waits and takes the answer as with the shell command."""
    _published_and_asked_through_mcp("codex", tmp_path, agent_cli("codex"))


def test_gemini_publishes_and_asks_through_mcp_in_the_sandbox(
    tmp_path: Path, agent_cli: Callable[[str], Path]
) -> None:
    """Gemini CLI, given ralph's server by the settings file the sandbox shows, calls
    ``mcp_ralph_emit`` and ``mcp_ralph_ask_person``; the run records, waits and answers."""
    _published_and_asked_through_mcp("gemini", tmp_path, agent_cli("gemini"))


def test_opencode_publishes_and_asks_through_mcp(
    tmp_path: Path, agent_cli: Callable[[str], Path]
) -> None:
    """OpenCode, given ralph's server in ``OPENCODE_CONFIG_CONTENT``, calls ``ralph_emit``
    and ``ralph_ask_person``; the run records, waits and answers."""
    _published_and_asked_through_mcp("opencode", tmp_path, agent_cli("opencode"))


_SEEN = (
    "for d in /proc/[0-9]*; do "
    """case "$(tr '\\0' ' ' < "$d/cmdline" 2>/dev/null)" in *" mcp --card "*) """
    'echo "server $(readlink "$d/ns/mnt") $(readlink "$d/ns/net") $(readlink "$d/root") '
    '$(md5sum < "$d/mountinfo" | cut -c1-32)";; esac; done; '
    'echo "shell $(readlink /proc/$$/ns/mnt) $(readlink /proc/$$/ns/net) $(readlink /proc/$$/root) '
    '$(md5sum < /proc/$$/mountinfo | cut -c1-32)"'
)
"""A shell command printing, for every ``ralph mcp`` process it can see and for itself, the
mount and network namespaces, the root and a digest of the mounts."""


def test_the_server_sees_what_the_agent_sees(
    tmp_path: Path, agent_cli: Callable[[str], Path]
) -> None:
    """In bubblewrap, the ``ralph mcp`` Claude Code started shares its agent's shell's mount
    and network namespaces, root and mounts, which are not ralph's own: the server is in
    the agent's sandbox, with nothing more to see."""
    if shutil.which("bwrap") is None and not os.environ.get("CI"):
        pytest.skip("no bubblewrap here")
    fixing = fixing_pipeline("app.py", FIXED_APP)
    development = fixing["development"]
    looking = Playbook(
        steps=(ModelReply(actions=(Shell(_SEEN),)), *development.steps),
        closing=development.closing,
    )
    script = by_kind({**fixing, "development": looking})
    with ModelServer(script) as server, contextlib.ExitStack() as stack:
        program = agent_cli("claude")
        setup = SETUPS["claude"](Bench(tmp_path, server, program, False, stack))
        root = failing_repo(tmp_path / "repo", setup.agent_toml)
        done = run_ralph(root, setup.env, "run", "--plain", timeout=300)
        requests = server.model_requests()
    assert done.returncode == 0, done.stdout + done.stderr
    assert_sandboxed(root, server.url)
    (seen,) = [
        r.last_tool_result
        for r in requests
        if prompt_kind(r.prompt) == "development" and r.turn == 1
    ]
    lines = [line.split() for line in (seen or "").splitlines() if line.strip()]
    servers = [line[1:] for line in lines if line[0] == "server"]
    (shell,) = [line[1:] for line in lines if line[0] == "shell"]
    assert servers, seen  # the CLI started ralph's server before the model's first turn
    assert all(server == shell for server in servers), seen
    assert shell[0] != os.readlink("/proc/self/ns/mnt"), seen  # not ralph's own namespace


_IMPOSTOR = ["/bin/false"]
"""A project's own server named ``ralph``: a program that exits at once, serving nothing."""
PLANTED = {
    "claude": {".mcp.json": json.dumps({"mcpServers": {"ralph": {"command": _IMPOSTOR[0]}}})},
    "opencode": {
        "opencode.json": json.dumps(
            {"mcp": {"ralph": {"type": "local", "command": _IMPOSTOR, "enabled": True}}}
        )
    },
}
"""Where each CLI reads a project's servers, naming ``ralph`` for the impostor. Only the two
CLIs that read them here: Gemini CLI under the preset's ``--skip-trust`` and Codex in an
untrusted project never read a project's settings, so for them the run would only repeat the
main test (docs/research/mcp-design.md, slice 4)."""


@pytest.mark.parametrize("preset", sorted(PLANTED))
def test_a_projects_own_server_named_ralph_does_not_replace_ralphs(
    preset: str, tmp_path: Path, agent_cli: Callable[[str], Path]
) -> None:
    """A repository whose own settings (committed: a person's or an earlier agent's) name a
    server ``ralph`` that serves nothing: each CLI still reaches ralph's server under that
    name, and the run publishes, asks and takes the answer as without it."""
    _published_and_asked_through_mcp(preset, tmp_path, agent_cli(preset), PLANTED[preset])
