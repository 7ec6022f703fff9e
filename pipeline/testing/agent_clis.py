"""The agent CLIs at pinned versions, installed into a cache for tests against the real tools (I/O).

Claude Code, Codex, Gemini CLI and OpenCode come from the npm registry (``npm install`` into a
folder of their own; their install scripts are not needed and npm does not run them); aider
comes from PyPI into a virtual environment of its own. The cache is
``$RALPH_AGENT_CLIS`` or ``~/.cache/ralph-pipeline/agent-clis``; each CLI lives in
``<name>-<version>`` there and is installed once. ``python -m pipeline.testing.agent_clis
install [NAME ...]`` installs them (CI does this before the tests); :func:`installed` finds one.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Final, final

from attrs import frozen

__all__ = ["PINS", "AgentCli", "InstallError", "cache_dir", "install", "installed"]


@final
@frozen(kw_only=True)
class AgentCli:
    """One agent CLI at a pinned version: where it comes from and which program it runs."""

    name: str
    registry: str
    """``npm`` or ``pypi``."""
    package: str
    version: str
    program: str

    @property
    def folder_name(self) -> str:
        """Its folder in the cache."""
        return f"{self.name}-{self.version}"


PINS: Final[Mapping[str, AgentCli]] = {
    cli.name: cli
    for cli in (
        AgentCli(
            name="claude",
            registry="npm",
            package="@anthropic-ai/claude-code",
            version="2.1.328",
            program="claude",
        ),
        AgentCli(
            name="codex",
            registry="npm",
            package="@openai/codex",
            version="0.169.0",
            program="codex",
        ),
        AgentCli(
            name="gemini",
            registry="npm",
            package="@google/gemini-cli",
            version="0.61.0",
            program="gemini",
        ),
        AgentCli(
            name="opencode",
            registry="npm",
            package="opencode-ai",
            version="1.18.33",
            program="opencode",
        ),
        AgentCli(
            name="aider", registry="pypi", package="aider-chat", version="0.86.2", program="aider"
        ),
    )
}
"""The versions the presets are tested with, by preset name."""


class InstallError(RuntimeError):
    """A CLI could not be installed; the message holds the installer's last lines."""


def cache_dir() -> Path:
    """Where the CLIs are installed."""
    given = os.environ.get("RALPH_AGENT_CLIS")
    return Path(given) if given else Path.home() / ".cache" / "ralph-pipeline" / "agent-clis"


def _program(cli: AgentCli, folder: Path) -> Path:
    if cli.registry == "npm":
        return folder / "node_modules" / ".bin" / cli.program
    return folder / "bin" / cli.program


def installed(name: str, cache: Path | None = None) -> Path | None:
    """The program of CLI ``name`` when it is installed in the cache, else None."""
    cli = PINS[name]
    folder = (cache or cache_dir()) / cli.folder_name
    program = _program(cli, folder)
    return program if program.exists() and (folder / ".installed").exists() else None


def _run(argv: Sequence[str], cwd: Path) -> None:
    result = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, check=False)
    if result.returncode != 0:
        tail = "\n".join((result.stdout + result.stderr).splitlines()[-15:])
        raise InstallError(f"{' '.join(argv)} failed ({result.returncode}):\n{tail}")


def install(name: str, cache: Path | None = None) -> Path:
    """Install CLI ``name`` at its pinned version (once) and return its program."""
    cli = PINS[name]
    found = installed(name, cache)
    if found is not None:
        return found
    folder = (cache or cache_dir()) / cli.folder_name
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    if cli.registry == "npm":
        npm = shutil.which("npm")
        if npm is None:
            raise InstallError(f"{name}: npm is not on PATH (install Node.js and npm)")
        (folder / "package.json").write_text('{"private": true}\n')
        _run(
            [
                npm,
                "install",
                "--no-audit",
                "--no-fund",
                f"{cli.package}@{cli.version}",
            ],
            folder,
        )
    else:
        _run([sys.executable, "-m", "venv", str(folder)], folder)
        _run(
            [
                str(folder / "bin" / "python"),
                "-m",
                "pip",
                "install",
                "-q",
                f"{cli.package}=={cli.version}",
            ],
            folder,
        )
    program = _program(cli, folder)
    if not program.exists():
        raise InstallError(f"{name}: installed, but {program} does not exist")
    (folder / ".installed").write_text(f"{cli.package} {cli.version}\n")
    return program


def main(argv: Sequence[str] | None = None) -> int:
    """``install [NAME ...]``: install the named CLIs (all by default); exit 1 on a failure."""
    args = list(sys.argv[1:] if argv is None else argv)
    if not args or args[0] != "install":
        print("usage: python -m pipeline.testing.agent_clis install [NAME ...]", file=sys.stderr)
        return 2
    names = args[1:] or list(PINS)
    unknown = [n for n in names if n not in PINS]
    if unknown:
        print(f"unknown CLI(s): {', '.join(unknown)} (known: {', '.join(PINS)})", file=sys.stderr)
        return 2
    failed = 0
    for name in names:
        try:
            print(f"{name}: {install(name)}", flush=True)
        except InstallError as error:
            failed += 1
            print(f"{name}: {error}", file=sys.stderr, flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
