"""The runtime's agent invoker gives an agent ralph's MCP server: a real invocation of a
shell script standing in for each CLI (named as it, first on ``PATH``), which writes down
the argv, environment and prompt it was given. The server is the run's own ralph
(``$RALPH_BIN``) on the run's card; ``[mcp] agents = false``, a prompt that asks for no
topic, a missing card and a command agent wire nothing; and in bubblewrap the files ralph
adds for MCP are readable and not writable."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from pipeline.core.config import RalphConfig, parse_config
from pipeline.core.effects import EffectId, InvokeAgent
from pipeline.engine import utc_now
from pipeline.events import AgentName, Count, Ordinal, PromptKind, Role
from pipeline.handlers.intake._files import card_path
from pipeline.handlers.runtime import WorkspaceLayout
from pipeline.handlers.runtime._agents import AgentInvoker
from pipeline.handlers.runtime._prompts import render_tools
from pipeline.handlers.runtime._run_setup import agent_environment
from pipeline.handlers.runtime._sandboxing import choose_sandbox
from tests.support import init_repository

RUN = "20261129-063000-a1b2c3"
PROMPT = "Do the work.\n"

RECORDER = """#!/bin/sh
mkdir -p seen
for a in "$@"; do printf '%s\\0' "$a"; done > seen/argv
env -0 > seen/env
cat > seen/stdin
{probe}
"""
"""Writes down its argv, environment and stdin in the workspace's ``seen/``."""


def invoke(
    tmp_path: Path,
    agent: str,
    *,
    toml: str = "",
    kind: PromptKind = PromptKind.DEVELOPMENT,
    card: bool = True,
    probe: str = "",
) -> tuple[list[str], dict[str, str], str, Path]:
    """Invoke agent ``main`` (``agent``: the body of ``[agents.main]``) once on a ``kind``
    prompt in a fresh repository; what the program was given (argv, environment, stdin) and
    the workspace."""
    root = init_repository(tmp_path / "w")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for program in ("claude", "codex", "gemini", "opencode", "aider", "agent"):
        script = bin_dir / program
        script.write_text(RECORDER.format(probe=probe))
        script.chmod(0o755)
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    text = f"[agents.main]\n{agent}\n{toml}"
    if "[sandbox]" not in toml:
        text += '\n[sandbox]\nmode = "off"\n'
    config: RalphConfig = parse_config(text, "ralph.toml")
    layout = WorkspaceLayout(root=root)
    layout.ralph_dir.mkdir(exist_ok=True)
    if card:
        card_path(root, RUN).write_text("{}")
    layout.prompt(kind).parent.mkdir(parents=True, exist_ok=True)
    layout.prompt(kind).write_text(PROMPT)
    base = {"PATH": f"{bin_dir}:{os.environ['PATH']}", "HOME": str(home)}
    environment = agent_environment(layout, RUN, base)
    choice = choose_sandbox(config, environment, workspace=root)
    invoker = AgentInvoker(
        layout=layout,
        run_id=RUN,
        agents=config.agents,
        hats=config.hats,
        environment=environment,
        clock=utc_now,
        sandbox=choice.sandbox(layout, config, RUN, ()),
        choice=choice,
        mcp=config.mcp.agents,
    )
    effect = InvokeAgent(
        effect_id=EffectId("e:1"),
        role=Role.DEVELOPER,
        agent=AgentName("main"),
        attempt=Ordinal(1),
        prompt_kind=kind,
        iteration=Count(1),
        review_pass=Count(0),
        events_offset=Count(0),
        events_lines=Count(0),
        response_schema=None,
    )
    for _facts in invoker(effect):
        pass
    seen = root / "seen"
    argv = (seen / "argv").read_bytes().decode().split("\0")[:-1]
    env = dict(
        entry.split("=", 1) for entry in (seen / "env").read_bytes().decode().split("\0") if entry
    )
    return argv, env, (seen / "stdin").read_text(), root


def test_claude_is_given_the_runs_own_ralph_on_its_card_and_the_prompt_names_the_tools(
    tmp_path: Path,
) -> None:
    """Claude Code's argv is the preset's plus ``--mcp-config`` (the server is ``$RALPH_BIN
    mcp --card`` the run's card) and ``--allowedTools=mcp__ralph``; the prompt it reads is
    the prompt file's, then the section naming the tools as Claude Code names them."""
    argv, env, stdin, root = invoke(tmp_path, 'preset = "claude"')
    preset_argv = ["-p", "--output-format", "stream-json", "--verbose"]
    assert argv[:4] == preset_argv
    config = json.loads(argv[-2].removeprefix("--mcp-config="))
    assert config["mcpServers"]["ralph"]["command"] == env["RALPH_BIN"]
    assert config["mcpServers"]["ralph"]["args"] == ["mcp", "--card", str(card_path(root, RUN))]
    assert argv[-1] == "--allowedTools=mcp__ralph"
    assert stdin == PROMPT + render_tools("mcp__ralph__{}")


def test_opencode_is_given_its_config_content_merged_with_the_agents_own(tmp_path: Path) -> None:
    """OpenCode's environment carries ``OPENCODE_CONFIG_CONTENT`` with the agent's own
    settings and ralph's server; its argv is the preset's alone."""
    own = '{"model": "anthropic/x"}'
    argv, env, stdin, _ = invoke(
        tmp_path, f"preset = \"opencode\"\nenv = {{ OPENCODE_CONFIG_CONTENT = '{own}' }}"
    )
    content = json.loads(env["OPENCODE_CONFIG_CONTENT"])
    assert content["model"] == "anthropic/x"
    assert content["mcp"]["ralph"]["command"][:2] == [env["RALPH_BIN"], "mcp"]
    assert argv[-1] == "Carry out the instructions below."
    assert stdin.endswith(render_tools("ralph_{}"))


@pytest.mark.parametrize(
    ("agent", "toml", "kind", "card"),
    [
        ('preset = "claude"', "[mcp]\nagents = false\n", PromptKind.DEVELOPMENT, True),
        ('preset = "claude"', "", PromptKind.COMMIT_MESSAGE, True),
        ('preset = "claude"', "", PromptKind.DEVELOPMENT, False),
        ('command = ["agent"]', "", PromptKind.DEVELOPMENT, True),
        ('preset = "aider"', "", PromptKind.DEVELOPMENT, True),
    ],
    ids=["mcp-off", "commit-message", "no-card", "command-agent", "aider"],
)
def test_what_wires_nothing(
    tmp_path: Path, agent: str, toml: str, kind: PromptKind, card: bool
) -> None:
    """With ``[mcp] agents = false``, on a prompt that asks for no topic, before the card is
    written, for a command agent or aider: no MCP argument, no MCP variable, and the prompt
    is the prompt file's alone (the shell command it holds is the only way)."""
    argv, env, stdin, _ = invoke(tmp_path, agent, toml=toml, kind=kind, card=card)
    assert not any("mcp" in arg for arg in argv)
    assert "OPENCODE_CONFIG_CONTENT" not in env
    assert stdin == PROMPT or Path(argv[-1]).read_text() == PROMPT  # aider reads the file


HAS_BWRAP = subprocess.run(["sh", "-c", "command -v bwrap"], capture_output=True).returncode == 0

PROBE = """
card="$RALPH_WORKSPACE_ROOT/.ralph/mcp-$RALPH_RUN_ID.json"
cat "$card" > seen/card
cat "$HOME/.gemini/settings.json" > seen/settings
(printf x >> "$card") 2>/dev/null && echo wrote > seen/card-written
(printf x >> "$HOME/.gemini/settings.json") 2>/dev/null && echo wrote > seen/settings-written
(rm -f "$card") 2>/dev/null; test -e "$card" || echo removed > seen/card-removed
test -e "$HOME/planted" && echo seen > seen/home-visible
exit 0
"""
"""Inside the sandbox: reads the card and Gemini CLI's settings, then tries to change each."""


@pytest.mark.slow
@pytest.mark.skipif(not HAS_BWRAP, reason="bubblewrap is not installed")
def test_in_the_sandbox_the_files_ralph_adds_for_mcp_are_readable_and_not_writable(
    tmp_path: Path,
) -> None:
    """In bubblewrap the card and Gemini CLI's settings shown with ralph's server are
    readable, and neither can be written or removed; the person's settings file on the host
    is unchanged."""
    settings = tmp_path / "home" / ".gemini" / "settings.json"
    settings.parent.mkdir(parents=True)
    settings.write_text('{"theme": "x"}')
    toml = '[sandbox]\nmode = "required"\n'
    (tmp_path / "home" / "planted").write_text("hidden in the sandbox")
    argv, _, _, root = invoke(tmp_path, 'preset = "gemini"', toml=toml, probe=PROBE)
    seen = root / "seen"
    assert (seen / "card").read_text() == "{}"
    shown = json.loads((seen / "settings").read_text())
    assert shown["theme"] == "x"
    assert shown["mcpServers"]["ralph"]["args"] == ["mcp", "--card", str(card_path(root, RUN))]
    assert not (seen / "card-written").exists()
    assert not (seen / "settings-written").exists()
    assert not (seen / "card-removed").exists()
    assert not (seen / "home-visible").exists()  # it did run in the sandbox
    assert settings.read_text() == '{"theme": "x"}'
    assert card_path(root, RUN).read_text() == "{}"
    assert not any("mcp" in arg for arg in argv)  # Gemini CLI takes it from its settings
