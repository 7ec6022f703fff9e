"""How each preset is given ralph's MCP server (``docs/research/mcp-design.md``): the argv,
variables and sandbox files each CLI's module declares, exactly; the person's own settings
kept; the CLIs that cannot take it left unwired, with why; and a link planted where a
wiring reads the person's settings never read through."""

from __future__ import annotations

import json
import os
import tomllib
from collections.abc import Mapping
from pathlib import Path

import pytest

from pipeline.app.cli._mcp_agent import _Session, tools
from pipeline.core.agents import MCP_TOOLS, PRESETS, Wired
from pipeline.handlers.agents.mcp import home_reader, wiring
from pipeline.handlers.runtime._prompts import render_tools

CARD = "/w/.ralph/mcp-r1.json"
COMMAND = ("/venv/bin/ralph", "mcp", "--card", CARD)


def wired(
    preset: str,
    environ: Mapping[str, str] | None = None,
    files: Mapping[str, bytes] | None = None,
    *,
    sandboxed: bool = True,
) -> Wired | str:
    """``preset``'s wiring with ``files`` as the person's files under ``$HOME``."""
    found = files or {}
    mcp = PRESETS[preset].mcp
    assert mcp is not None
    value = mcp.wire(COMMAND, environ or {}, found.get)
    if isinstance(value, Wired) and value.home_files and not sandboxed:
        return "outside the sandbox"
    return value


def test_claude_gets_its_mcp_config_and_mcp_ralph_allowed() -> None:
    """Claude Code gets ``--mcp-config`` with the server always loaded, and the server's tools
    allowed by a second ``--allowedTools``; nothing else."""
    got = wired("claude")
    assert isinstance(got, Wired)
    flag, allowed = got.argv
    assert flag.startswith("--mcp-config=")
    assert json.loads(flag.removeprefix("--mcp-config=")) == {
        "mcpServers": {
            "ralph": {
                "type": "stdio",
                "command": "/venv/bin/ralph",
                "args": ["mcp", "--card", CARD],
                "alwaysLoad": True,
            }
        }
    }
    assert allowed == "--allowedTools=mcp__ralph"
    assert (got.env, got.home_files, got.tool) == ({}, {}, "mcp__ralph__{}")


def test_codex_gets_its_overrides_with_approval() -> None:
    """Codex gets three ``-c`` overrides whose values are TOML (read back with ``tomllib``):
    the command, its arguments, and its tools approved."""
    got = wired("codex")
    assert isinstance(got, Wired)
    assert got.argv[0::2] == ("-c", "-c", "-c")
    overrides = "\n".join(got.argv[1::2]).replace("mcp_servers.ralph.", "")
    assert tomllib.loads(overrides) == {
        "command": "/venv/bin/ralph",
        "args": ["mcp", "--card", CARD],
        "default_tools_approval_mode": "approve",
    }
    assert (got.env, got.home_files) == ({}, {})


def test_codex_values_stay_toml_whatever_the_path() -> None:
    """A card path with quotes, backslashes, non-ASCII letters, an emoji (which JSON would
    escape as surrogates) and DEL is still one TOML string."""
    odd = ("/v/ralph", "mcp", "--card", '/w "q"\\é😀\x7f/.ralph/mcp-r1.json')
    mcp = PRESETS["codex"].mcp
    assert mcp is not None
    got = mcp.wire(odd, {}, {}.get)
    assert isinstance(got, Wired)
    assert tomllib.loads(got.argv[3].replace("mcp_servers.ralph.", ""))["args"] == list(odd[1:])


def test_settings_an_agent_nested_too_deep_leave_gemini_unwired() -> None:
    """An agent can create Gemini CLI's settings where the person has none: a file nesting
    deeper than the parser recurses leaves Gemini unwired, and never crashes the run."""
    deep = b"[" * 100_000 + b"]" * 100_000
    assert isinstance(wired("gemini", files={".gemini/settings.json": deep}), str)


def test_opencode_config_content_merges_the_agents_own() -> None:
    """OpenCode's ``OPENCODE_CONFIG_CONTENT`` keeps what the agent's own sets (its model, its
    other servers) and adds (or replaces) ``mcp.ralph``."""
    own = {"model": "anthropic/x", "mcp": {"other": {"type": "local"}, "ralph": {"x": 1}}}
    got = wired("opencode", {"OPENCODE_CONFIG_CONTENT": json.dumps(own)})
    assert isinstance(got, Wired)
    assert got.argv == ()
    assert json.loads(got.env["OPENCODE_CONFIG_CONTENT"]) == {
        "model": "anthropic/x",
        "mcp": {
            "other": {"type": "local"},
            "ralph": {"type": "local", "command": list(COMMAND), "enabled": True},
        },
    }
    assert got.tool == "ralph_{}"


@pytest.mark.parametrize("own", ["{not json", "[1]", '{"mcp": 3}'])
def test_opencode_with_a_config_content_ralph_cannot_read_is_unwired(own: str) -> None:
    """A config content that is no JSON object, or whose ``mcp`` is no table, is left as the
    person wrote it: the agent is not wired, and the reason says why."""
    assert isinstance(wired("opencode", {"OPENCODE_CONFIG_CONTENT": own}), str)


def test_gemini_settings_keep_the_persons_and_add_ralph() -> None:
    """Gemini CLI's settings, shown in the sandbox, are the person's with ``mcpServers.ralph``
    (trusted) added, and ``ralph`` added to an ``mcp.allowed`` list."""
    own = {"theme": "x", "mcpServers": {"mine": {"command": "m"}}, "mcp": {"allowed": ["mine"]}}
    got = wired("gemini", files={".gemini/settings.json": json.dumps(own).encode()})
    assert isinstance(got, Wired)
    assert (got.argv, got.env, got.tool) == ((), {}, "mcp_ralph_{}")
    assert json.loads(got.home_files[".gemini/settings.json"]) == {
        "theme": "x",
        "mcpServers": {
            "mine": {"command": "m"},
            "ralph": {"command": "/venv/bin/ralph", "args": ["mcp", "--card", CARD], "trust": True},
        },
        "mcp": {"allowed": ["mine", "ralph"]},
    }


@pytest.mark.parametrize(
    ("files", "sandboxed"),
    [
        ({".gemini/settings.json": b"{}"}, False),
        ({}, True),
        ({".gemini/settings.json": b"// comments\n{}"}, True),
        ({".gemini/settings.json": b'{"mcp": {"excluded": ["ralph"]}}'}, True),
        ({".gemini/settings.json": b'{"mcpServers": []}'}, True),
    ],
)
def test_gemini_is_unwired_outside_the_sandbox_and_with_unreadable_settings(
    files: dict[str, bytes], sandboxed: bool
) -> None:
    """Outside the sandbox ralph would have to write the person's file; a missing one cannot
    be covered, one with comments cannot be read, one that excludes ``ralph`` is obeyed."""
    assert isinstance(wired("gemini", files=files, sandboxed=sandboxed), str)


def test_aider_and_command_agents_are_not_wired(tmp_path: Path) -> None:
    """aider has no MCP client, and a command agent is the person's program: neither is
    wired, and each says why."""
    assert PRESETS["aider"].mcp is None
    environ = {"HOME": str(tmp_path)}
    assert wiring(PRESETS["aider"], COMMAND, environ, sandboxed=True) == (
        "none: aider has no MCP client"
    )
    assert "command agent" in str(wiring(None, COMMAND, environ, sandboxed=True))


def test_the_handler_shows_gemini_its_settings_in_the_sandbox_only(tmp_path: Path) -> None:
    """Through the handler, Gemini CLI's wiring reads the real settings file under ``$HOME``
    and is applied in the sandbox only."""
    (tmp_path / ".gemini").mkdir()
    (tmp_path / ".gemini" / "settings.json").write_text('{"theme": "x"}')
    environ = {"HOME": str(tmp_path)}
    inside = wiring(PRESETS["gemini"], COMMAND, environ, sandboxed=True)
    assert isinstance(inside, Wired)
    assert json.loads(inside.home_files[".gemini/settings.json"])["theme"] == "x"
    assert isinstance(wiring(PRESETS["gemini"], COMMAND, environ, sandboxed=False), str)


def test_a_link_planted_as_the_persons_settings_is_not_read(tmp_path: Path) -> None:
    """An agent can write its CLI's folder: a link there to a credential file ralph can read
    (and the sandbox hides) is never read, so it is never shown inside; nor is a FIFO."""
    secret = tmp_path / "credentials.json"
    secret.write_text('{"private_key": "s3cret"}')
    (tmp_path / ".gemini").mkdir()
    (tmp_path / ".gemini" / "settings.json").symlink_to(secret)
    os.mkfifo(tmp_path / "fifo.json")
    read = home_reader(tmp_path)
    assert read(".gemini/settings.json") is None
    assert read("fifo.json") is None
    assert read("credentials.json") == secret.read_bytes()
    got = wiring(PRESETS["gemini"], COMMAND, {"HOME": str(tmp_path)}, sandboxed=True)
    assert isinstance(got, str)


def test_the_prompt_names_the_tools_the_server_serves() -> None:
    """The tools the prompt names are the server's own, in its order, as the CLI names
    them; and the shell command stays beside them."""
    served = tuple(tool.name for tool in tools(_Session("no card")))
    assert served == MCP_TOOLS
    text = render_tools("mcp__ralph__{}")
    assert all(f"`mcp__ralph__{name}`" in text for name in MCP_TOOLS)
    assert '"$RALPH_BIN"' in text
