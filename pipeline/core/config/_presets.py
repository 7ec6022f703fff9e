"""Built-in agent presets: the usual headless invocation of each common agent CLI (pure data).

A preset is data, not code: the program and its arguments, how the prompt reaches it, the
flag that names a model, and the output format its usage is read from. ``{prompt_file}`` in an
argument is replaced by the path of the rendered prompt file. Each is tested end to end with
the real CLI at its pinned version (``tests.agent_clis``); the reasons for every
flag are in ``docs/architecture/agents/<name>.md``:

- Claude Code: print mode (``-p``) reading the prompt on stdin, ``stream-json`` output (with
  ``--verbose``), edits accepted and the tools it needs allowed by name, which works as root
  (bypass mode refuses root outside a sandbox).
- Codex: ``codex exec --json`` with ``-`` (the prompt on stdin) in the ``workspace-write``
  sandbox.
- Gemini CLI: headless, the prompt on stdin and ``-p`` after it, ``--skip-trust`` (a fresh
  folder is not trusted, and yolo would be downgraded there), ``stream-json`` output.
- OpenCode: ``opencode run --format json`` with the message first and the prompt on stdin.
- Aider: without git (it would refuse to write ralph's ignored reports), whole-file edits, no
  history files, update checks or analytics; it cannot run commands, so it cannot publish.
"""

from __future__ import annotations

import enum
import types
from collections.abc import Mapping
from typing import Final, final

from attrs import frozen

__all__ = ["OUTPUT_FORMATS", "PRESETS", "AgentPreset", "PromptVia"]

OUTPUT_FORMATS: Final = (
    "claude-stream-json",
    "codex-json",
    "gemini-stream-json",
    "opencode-json",
    "aider",
)
"""The output formats whose usage ralph can read (``output_format`` in ``[agents.NAME]``)."""


@enum.unique
class PromptVia(enum.StrEnum):
    """How an agent receives its prompt."""

    STDIN = "stdin"
    ARGUMENT = "argument"
    FILE = "file"


@final
@frozen(kw_only=True)
class AgentPreset:
    """One built-in agent backend."""

    argv: tuple[str, ...]
    prompt_via: PromptVia
    model_flag: str
    """The flag that precedes a model name (``--model``)."""
    output_format: str | None = None
    """How its output reports usage (a key of ``pipeline.handlers.agents.usage.PARSERS``)."""


PRESETS: Final[Mapping[str, AgentPreset]] = types.MappingProxyType(
    {
        "claude": AgentPreset(
            argv=(
                "claude",
                "-p",
                "--output-format",
                "stream-json",
                "--verbose",
                "--permission-mode",
                "acceptEdits",
                "--allowedTools=Bash,Edit,Write,Read",
            ),
            prompt_via=PromptVia.STDIN,
            model_flag="--model",
            output_format="claude-stream-json",
        ),
        "codex": AgentPreset(
            argv=("codex", "exec", "--json", "--sandbox", "workspace-write", "-"),
            prompt_via=PromptVia.STDIN,
            model_flag="--model",
            output_format="codex-json",
        ),
        "gemini": AgentPreset(
            argv=(
                "gemini",
                "--skip-trust",
                "--approval-mode",
                "yolo",
                "--output-format",
                "stream-json",
                "-p",
                "Carry out the instructions given above.",
            ),
            prompt_via=PromptVia.STDIN,
            model_flag="--model",
            output_format="gemini-stream-json",
        ),
        "opencode": AgentPreset(
            argv=(
                "opencode",
                "run",
                "--format",
                "json",
                "--title",
                "ralph",
                "Carry out the instructions below.",
            ),
            prompt_via=PromptVia.STDIN,
            model_flag="--model",
            output_format="opencode-json",
        ),
        "aider": AgentPreset(
            argv=(
                "aider",
                "--no-git",
                "--edit-format",
                "whole",
                "--yes-always",
                "--no-stream",
                "--no-pretty",
                "--no-fancy-input",
                "--chat-history-file",
                "/dev/null",
                "--input-history-file",
                "/dev/null",
                "--no-check-update",
                "--no-show-release-notes",
                "--no-show-model-warnings",
                "--no-analytics",
                "--no-detect-urls",
                "--no-suggest-shell-commands",
                "--message-file",
                "{prompt_file}",
            ),
            prompt_via=PromptVia.FILE,
            model_flag="--model",
            output_format="aider",
        ),
    }
)
"""The built-in presets by name."""
