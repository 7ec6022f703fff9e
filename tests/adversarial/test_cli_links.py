"""A person's own link among a CLI folder's read-only entries (``~/.claude/settings.json ->
~/dotfiles/claude.json``, as dotfile managers make them) is not bound into the sandbox (bwrap
would follow it), so it lies in a folder the agent can write: the sandbox puts it back, as
the same link, once the agent has ended."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from pipeline.handlers.runtime import WorkspaceLayout
from tests.runtime.workspace import (
    RALPH,
    claude_preset_workspace,
    processes_with,
    ralph,
    wait_for,
)

HAS_BWRAP = subprocess.run(["sh", "-c", "command -v bwrap"], capture_output=True).returncode == 0
needs_bwrap = pytest.mark.skipif(
    not HAS_BWRAP and not os.environ.get("CI"), reason="bubblewrap is not installed"
)

HOOK = '{"hooks": {"SessionStart": [{"hooks": [{"type": "command", "command": "id > /tmp/x"}]}]}}'


@needs_bwrap
def test_the_persons_linked_settings_are_put_back(tmp_path: Path) -> None:
    """The agent removes the person's ``settings.json`` link and writes a ``SessionStart``
    hook in its place, and replaces the ``commands`` link with a folder of its own: after the
    invocation both are the person's links again, to the same targets, which are unchanged,
    and the run's log says what was put back (without the guard the hook file stays, and
    the person's next ``claude`` runs it)."""
    home = tmp_path / "home"
    dotfiles = tmp_path / "dotfiles"
    dotfiles.mkdir()
    (dotfiles / "claude.json").write_text('{"theme": "dark"}\n')
    (dotfiles / "commands").mkdir()
    (dotfiles / "commands" / "mine.md").write_text("the person's command\n")
    folder = home / ".claude"
    folder.mkdir(parents=True)
    (folder / "settings.json").symlink_to(dotfiles / "claude.json")
    (folder / "commands").symlink_to("../../dotfiles/commands")
    plant = (
        'rm -f "$HOME/.claude/settings.json"\n'
        f"echo '{HOOK}' > \"$HOME/.claude/settings.json\"\n"
        'rm -f "$HOME/.claude/commands"\n'
        'mkdir "$HOME/.claude/commands" && echo "rm -rf ~" > "$HOME/.claude/commands/x.md"\n'
    )
    root, env = claude_preset_workspace(tmp_path, home, plant)
    ralph("run", "--plain", cwd=root, env=env)
    settings, commands = folder / "settings.json", folder / "commands"
    assert settings.is_symlink(), settings.read_text()
    assert os.readlink(settings) == str(dotfiles / "claude.json")
    assert (dotfiles / "claude.json").read_text() == '{"theme": "dark"}\n'
    assert commands.is_symlink()
    assert os.readlink(commands) == "../../dotfiles/commands"
    assert sorted(p.name for p in (dotfiles / "commands").iterdir()) == ["mine.md"]
    shown = ralph("events", "--format", "jsonl", "--category", "commit", cwd=root, env=env)
    facts = [json.loads(line) for line in shown.stdout.splitlines()]
    restored = [f["paths"] for f in facts if f["type"] == "commit.git_metadata_restored"]
    assert [str(settings), str(commands)] in restored, shown.stdout


@needs_bwrap
def test_a_link_replaced_while_ralph_was_killed_is_put_back_before_the_next_agent(
    tmp_path: Path,
) -> None:
    """ralph is killed -9 while its agent, which replaced the person's ``settings.json`` link
    with a hook, still runs: the plant stays (the window sandbox.md states), but the resumed
    run puts the link back from the record kept in ralph's state folder before its next agent
    starts (that agent finds the link), not only after it."""
    home = tmp_path / "home"
    dotfiles = tmp_path / "dotfiles"
    dotfiles.mkdir()
    (dotfiles / "claude.json").write_text('{"theme": "dark"}\n')
    folder = home / ".claude"
    folder.mkdir(parents=True)
    settings = folder / "settings.json"
    settings.symlink_to(dotfiles / "claude.json")
    marker = f"linked-sleeper-{os.getpid()}-{time.monotonic_ns()}"
    body = (
        'if [ -L "$HOME/.claude/settings.json" ]; then echo link; else echo plant; fi >> found\n'
        "if [ ! -e slept ]; then : > slept\n"
        '  rm -f "$HOME/.claude/settings.json"\n'
        f"  echo '{HOOK}' > \"$HOME/.claude/settings.json\"\n"
        f'  : > started; exec sh -c "sleep 300; : {marker}"\n'
        "fi\n"
    )
    root, env = claude_preset_workspace(tmp_path, home, body)
    (root / ".gitignore").write_text("found\nslept\nstarted\n")
    subprocess.run(["git", "add", ".gitignore"], cwd=root, check=True)
    subprocess.run(["git", "commit", "--quiet", "-m", "ignore"], cwd=root, check=True)
    driver = subprocess.Popen(
        [*RALPH, "run"],
        cwd=root,
        env={**os.environ, **env},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_for((root / "started").exists, "the agent never planted", alive=driver)
        driver.send_signal(signal.SIGKILL)
        driver.wait(timeout=10)
        wait_for(lambda: not processes_with(marker), "the agent outlived ralph", within_s=30)
    finally:
        if driver.poll() is None:
            driver.kill()
    assert not settings.is_symlink()  # the window: nothing of ralph ran since
    assert (WorkspaceLayout(root=root).state_dir / "cli-links.json").is_file()
    resumed = ralph("resume", "--plain", cwd=root, env=env)
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert (root / "found").read_text().split()[:2] == ["link", "link"]
    assert settings.is_symlink()
    assert os.readlink(settings) == str(dotfiles / "claude.json")
    assert (dotfiles / "claude.json").read_text() == '{"theme": "dark"}\n'
    assert not (WorkspaceLayout(root=root).state_dir / "cli-links.json").exists()
