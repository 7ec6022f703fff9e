"""The doctor's checks, one at a time, with real fake CLIs on PATH (shell scripts) and real
git: each finds what it is for and names the fix."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path

import orjson

from pipeline.app.workspace import Check, Status
from pipeline.app.workspace._doctor import (
    agent_pitfalls,
    check_agents,
    check_gates,
    check_store,
    check_validate,
    diagnose,
)
from pipeline.core.config import parse_config
from pipeline.handlers.runtime import WorkspaceLayout
from tests.runtime.workspace import make_workspace


def _cli(folder: Path, name: str, body: str = 'echo "9.9.9 (fake)"') -> Path:
    """An executable ``name`` in ``folder`` running ``body`` (a stand-in for an agent CLI)."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text(f"#!/bin/sh\n{body}\n")
    path.chmod(0o755)
    return path


def _environ(bin_dir: Path, home: Path) -> dict[str, str]:
    return {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}", "HOME": str(home)}


def test_claude_as_root_without_is_sandbox_fails_and_names_the_fix(tmp_path: Path) -> None:
    """claude in bypass mode as root: a FAIL naming IS_SANDBOX (the run's own check, shared);
    the preset as it is, not as root, or with IS_SANDBOX in the agent's env (or ralph's), no
    pitfall."""
    bypass = 'args = ["--dangerously-skip-permissions"]\n'
    config = parse_config(f'[agents.claude]\npreset = "claude"\n{bypass}', "t")
    agent = config.agents["claude"]
    environ = {"PATH": "/usr/bin"}
    (problem, _fix), *rest = agent_pitfalls("claude", agent, tmp_path, environ, is_root=True)
    assert rest == []
    assert "root" in problem
    assert '[agents.claude] env = { IS_SANDBOX = "1" }' in problem
    assert agent_pitfalls("claude", agent, tmp_path, environ, is_root=False) == []
    preset = parse_config('[agents.claude]\npreset = "claude"\n', "t").agents["claude"]
    assert agent_pitfalls("claude", preset, tmp_path, environ, is_root=True) == []
    sandboxed = parse_config(
        f'[agents.claude]\npreset = "claude"\n{bypass}env = {{ IS_SANDBOX = "1" }}\n', "t"
    ).agents["claude"]
    assert agent_pitfalls("claude", sandboxed, tmp_path, environ, is_root=True) == []
    assert agent_pitfalls("claude", agent, tmp_path, {"IS_SANDBOX": "1"}, is_root=True) == []


def test_gemini_in_a_folder_it_does_not_trust_fails_unless_trusted_or_skipped(
    tmp_path: Path,
) -> None:
    """No trust entry: a FAIL naming --skip-trust; a TRUST_FOLDER above the workspace, a
    TRUST_PARENT beside it, folder trust off, or --skip-trust in the args: none."""
    root = tmp_path / "projects" / "repo"
    root.mkdir(parents=True)
    home = tmp_path / "home"
    (home / ".gemini").mkdir(parents=True)
    environ = {"HOME": str(home)}
    # The preset passes --skip-trust; a command of one's own may not.
    agent = parse_config('[agents.g]\ncommand = ["gemini", "--approval-mode", "yolo"]\n', "t")
    agent = agent.agents["g"]
    ((problem, fix),) = agent_pitfalls("g", agent, root, environ, is_root=False)
    assert "does not trust" in problem
    assert "--skip-trust" in fix
    trusted = home / ".gemini" / "trustedFolders.json"
    for entries in (
        {str(tmp_path / "projects"): "TRUST_FOLDER"},
        {str(tmp_path / "projects" / "other"): "TRUST_PARENT"},
    ):
        trusted.write_bytes(orjson.dumps(entries))
        assert agent_pitfalls("g", agent, root, environ, is_root=False) == []
    trusted.write_bytes(orjson.dumps({str(root): "DO_NOT_TRUST"}))
    assert len(agent_pitfalls("g", agent, root, environ, is_root=False)) == 1
    preset = parse_config('[agents.g]\npreset = "gemini"\n', "t").agents["g"]
    assert agent_pitfalls("g", preset, root, environ, is_root=False) == []
    (home / ".gemini" / "settings.json").write_text(
        '{"security": {"folderTrust": {"enabled": false}}}'
    )
    assert agent_pitfalls("g", agent, root, environ, is_root=False) == []


def test_a_preset_cli_is_run_for_its_version_and_a_silent_one_fails(tmp_path: Path) -> None:
    """A real fake CLI answering --version is OK and shown; one that exits non-zero fails;
    one that overruns the timeout fails saying so."""
    bin_dir, home = tmp_path / "bin", tmp_path / "home"
    _cli(bin_dir, "codex", 'echo "codex-cli 0.169.0"')
    _cli(bin_dir, "opencode", "echo broken >&2; exit 3")
    config = parse_config(
        '[agents.codex]\npreset = "codex"\n[agents.oc]\npreset = "opencode"\n'
        '[chains]\ndefault = ["codex", "oc"]\n',
        "t",
    )
    # The workspace beside the CLIs: one in it is never run outside the sandbox.
    root = tmp_path / "ws"
    root.mkdir()
    checks = check_agents(root, config, _environ(bin_dir, home), is_root=False)
    by_name = {c.name: c for c in checks if c.name.startswith("agent ") and "pitfall" not in c.name}
    assert by_name["agent codex"].status is Status.OK
    assert "codex-cli 0.169.0" in by_name["agent codex"].detail
    assert by_name["agent oc"].status is Status.FAIL
    assert "exited 3: broken" in by_name["agent oc"].detail

    def overrun(
        argv: Sequence[str], _cwd: Path, _env: Mapping[str, str], timeout: float
    ) -> tuple[int, str]:
        raise subprocess.TimeoutExpired(list(argv), timeout)

    slow = check_agents(root, config, _environ(bin_dir, home), is_root=False, run=overrun)
    versions = [c for c in slow if c.name in {"agent codex", "agent oc"}]
    assert len(versions) == 2
    assert all("did not answer within 5 s" in c.detail for c in versions)


def test_a_preset_cli_is_asked_its_version_outside_the_workspace(tmp_path: Path) -> None:
    """The CLI answering ``--version`` runs in an empty folder, never the workspace, whose
    project settings (``.gemini``, ``opencode.json``) are the agent's files."""
    bin_dir, home, root = tmp_path / "bin", tmp_path / "home", tmp_path / "ws"
    root.mkdir()
    seen = tmp_path / "cwd.txt"
    _cli(bin_dir, "codex", f'pwd > {seen}; ls -A >> {seen}; echo "codex-cli 0.169.0"')
    (root / ".codex").mkdir()
    config = parse_config('[agents.codex]\npreset = "codex"\n[chains]\ndefault = ["codex"]\n', "t")
    checks = check_agents(root, config, _environ(bin_dir, home), is_root=False)
    assert any(c.name == "agent codex" and c.status is Status.OK for c in checks)
    where, *entries = seen.read_text().splitlines()
    assert not Path(where).resolve().is_relative_to(root.resolve())
    assert entries == []  # an empty folder


def _without_mcp(checks: list[Check]) -> list[Check]:
    return [check for check in checks if not check.name.endswith(" mcp")]


def test_each_agent_has_a_row_saying_how_it_is_given_ralphs_mcp_server(tmp_path: Path) -> None:
    """One ``mcp`` row per agent: how its CLI takes the server, a warning saying why where
    it could and cannot (Gemini CLI without settings to show), none for aider and a command
    agent; with ``[mcp] agents = false`` every row says it is off."""
    bin_dir, home = tmp_path / "bin", tmp_path / "home"
    for program in ("claude", "codex", "gemini", "opencode", "aider", "mine"):
        _cli(bin_dir, program)
    agents = "".join(
        f'[agents.{name}]\npreset = "{name}"\n'
        for name in ("claude", "codex", "gemini", "opencode", "aider")
    )
    text = f'{agents}[agents.mine]\ncommand = ["mine"]\n[chains]\ndefault = ["claude"]\n'
    environ = _environ(bin_dir, home)

    def rows(toml: str) -> dict[str, Check]:
        checks = check_agents(tmp_path, parse_config(toml, "t"), environ, is_root=False)
        return {c.name.split()[1]: c for c in checks if c.name.endswith(" mcp")}

    said = rows(text)
    assert said["claude"].detail == "--mcp-config"
    assert said["codex"].detail == "-c mcp_servers.ralph"
    assert said["opencode"].detail == "OPENCODE_CONFIG_CONTENT"
    assert said["gemini"].status is Status.WARN
    assert "settings.json is missing" in said["gemini"].detail
    assert said["aider"].detail == "none: aider has no MCP client"
    assert "command agent" in said["mine"].detail
    assert all(said[n].status is Status.OK for n in ("claude", "codex", "opencode", "aider"))
    (home / ".gemini").mkdir(parents=True)
    (home / ".gemini" / "settings.json").write_text("{}")
    assert rows(text)["gemini"].detail == "its settings, in the sandbox only"
    off = rows(text + "[mcp]\nagents = false\n")
    assert all("[mcp] agents = false" in row.detail for row in off.values())


def test_a_missing_agent_fails_only_when_a_chain_has_nothing_left(tmp_path: Path) -> None:
    """A missing program with a found agent after it in every chain is a warning (the chain
    falls back); the only agent of a role's chain missing is a failure naming the role."""
    bin_dir, home = tmp_path / "bin", tmp_path / "home"
    _cli(bin_dir, "here")
    config = parse_config(
        '[agents.gone]\ncommand = ["gone-xyz"]\n[agents.here]\ncommand = ["here"]\n'
        '[chains]\ndefault = ["gone", "here"]\nreviewer = ["gone"]\n',
        "t",
    )
    environ = _environ(bin_dir, home)
    (gone, here) = _without_mcp(check_agents(tmp_path, config, environ, is_root=False))
    assert gone.status is Status.FAIL
    assert "'gone-xyz' not found on PATH" in gone.detail
    assert "reviewer" in gone.detail
    assert "install gone-xyz" in gone.fix
    assert here.status is Status.OK
    fallback = parse_config(
        '[agents.gone]\ncommand = ["gone-xyz"]\n[agents.here]\ncommand = ["here"]\n'
        '[chains]\ndefault = ["gone", "here"]\n',
        "t",
    )
    (gone, _here) = _without_mcp(check_agents(tmp_path, fallback, environ, is_root=False))
    assert gone.status is Status.WARN
    assert "fall back" in gone.detail


def test_the_store_check_reads_sqlite_paths_and_refuses_unknown_schemes(tmp_path: Path) -> None:
    """A SQLite file to be created in a writable folder is OK; an unknown scheme and a folder
    that cannot be written fail."""
    (ok,) = check_store(str(WorkspaceLayout(root=tmp_path).store))
    assert ok.status is Status.OK
    (scheme,) = check_store("mysql://db/x")
    assert scheme.status is Status.FAIL
    assert "unknown store scheme 'mysql'" in scheme.detail
    locked = tmp_path / "locked"
    locked.mkdir(mode=0o500)
    if os.geteuid() != 0:  # root writes anywhere: the check would rightly pass
        (denied,) = check_store(str(locked / "x.db"))
        assert denied.status is Status.FAIL


def test_git_identity_missing_fails_with_the_command_to_set_it(tmp_path: Path) -> None:
    """A repository with no user.name/email anywhere: git would refuse to commit."""
    root = make_workspace(tmp_path / "ws", scripts={}, agents={"a": ["true"]})
    subprocess.run(["git", "config", "--unset", "user.name"], cwd=root, check=True)
    home = tmp_path / "home"
    home.mkdir()
    environ = {
        k: v for k, v in os.environ.items() if not k.startswith(("GIT_AUTHOR", "GIT_COMMITTER"))
    }
    environ |= {"HOME": str(home), "XDG_CONFIG_HOME": str(home), "GIT_CONFIG_NOSYSTEM": "1"}
    checks = {c.name: c for c in diagnose(root, environ)}
    assert checks["git identity"].status is Status.FAIL
    assert "user.name" in checks["git identity"].detail
    assert 'git config user.name "..."' in checks["git identity"].fix
    assert checks["repository"].status is Status.OK


def test_each_gate_program_is_found_or_fails_and_a_completion_gate_without_a_promise_warns(
    tmp_path: Path,
) -> None:
    """One check per gate: a program on PATH or in the workspace is OK, a missing one fails
    with the line ``ralph run`` refuses with and the fix; a ``completion`` gate with the
    completion promise off warns (it waits for a claim that cannot come); with gates, no
    ``validate`` is no warning."""
    bin_dir, home = tmp_path / "bin", tmp_path / "home"
    _cli(bin_dir, "lint-here")
    _cli(tmp_path / "scripts", "check.sh")
    config = parse_config(
        '[loop]\ncompletion_promise = ""\n'
        '[[gates]]\nname = "lint"\nargv = ["lint-here"]\non_failure = "warn"\n'
        '[[gates]]\nname = "local"\nargv = ["scripts/check.sh"]\non = ["completion", "final"]\n'
        '[[gates]]\nname = "tests"\nargv = ["ralph-test-no-such-runner", "-q"]\n'
        'on = ["completion"]\n',
        "t",
    )
    checks = check_gates(tmp_path, config, _environ(bin_dir, home))
    shown = [(c.name, c.status, c.detail) for c in checks]
    assert shown == [
        ("gate lint", Status.OK, "program 'lint-here' found; at final, on failure warn"),
        (
            "gate local",
            Status.OK,
            "program 'scripts/check.sh' found; at completion, final, on failure block",
        ),
        (
            "gate local",
            Status.WARN,
            "gates.1.on: completion never applies (loop.completion_promise is off): "
            "it runs at final only",
        ),
        (
            "gate tests",
            Status.FAIL,
            "gates.2.argv: program 'ralph-test-no-such-runner' not found (on PATH or here)",
        ),
        (
            "gate tests",
            Status.WARN,
            "gates.2.on: completion never applies (loop.completion_promise is off): it never runs",
        ),
    ]
    fix = "install ralph-test-no-such-runner or correct gates.2.argv in ralph.toml"
    assert checks[3].fix == fix
    (validate,) = check_validate(tmp_path, config, _environ(bin_dir, home))
    assert (validate.status, validate.detail) == (Status.OK, "none: the gates check the work")
    with_promise = parse_config(
        '[[gates]]\nname = "tests"\nargv = ["lint-here"]\non = ["completion"]\n', "t"
    )
    assert [c.status for c in check_gates(tmp_path, with_promise, _environ(bin_dir, home))] == [
        Status.OK
    ]
