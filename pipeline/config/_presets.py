"""Built-in agent presets: the usual headless invocation of each common agent CLI (pure data).

A preset is data, not code: the program and its arguments, how the prompt reaches it, and the
flag that names a model. ``{prompt_file}`` in an argument is replaced by the path of the
rendered prompt file. The invocations follow each tool's documented non-interactive mode:

- Claude Code: print mode (``-p``) reading the prompt on stdin, ``stream-json`` output (which
  print mode only gives together with ``--verbose``), edits and commands allowed without asking
  by naming the tools (``acceptEdits`` plus ``--allowedTools``), which also works as root,
  where ``--dangerously-skip-permissions`` is refused unless ``IS_SANDBOX=1``.
- Codex: ``codex exec --json`` (JSON lines, whose ``turn.completed`` reports usage) with ``-``
  (the prompt on stdin) in the ``workspace-write`` sandbox: it edits the workspace and runs
  commands there (``"$RALPH_BIN" emit`` writes the events file inside it) without asking.
- Gemini CLI: headless, the prompt on stdin; ``-p`` adds an instruction after it; ``yolo``
  approval so that no confirmation blocks the run; ``--skip-trust`` because in a folder the
  person never trusted it refuses to run headless (exit 55) and would downgrade ``yolo``;
  ``stream-json`` output, whose ``result`` line reports the tokens used.
- OpenCode: ``opencode run --format json`` (JSON events), the prompt on stdin, which opencode
  appends to the message as it is (an attached file would reach the model as a Read tool
  result with line numbers); a fixed ``--title`` spares a model request per invocation.
- Aider: ``--message-file`` with the prompt file, answering yes to every question, without
  git (with git it refuses to write ralph's ignored report files and would add ``.aider*``
  to ``.gitignore``), without streaming, colours, history files, update checks, analytics or
  URL fetching, in the ``whole`` edit format. It cannot run commands, so it cannot publish
  topics (see docs/architecture/agents/aider.md).
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
@frozen
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
            (
                "claude",
                "-p",
                "--output-format",
                "stream-json",
                "--verbose",
                "--permission-mode",
                "acceptEdits",
                "--allowedTools=Bash,Edit,Write,Read",
            ),
            PromptVia.STDIN,
            "--model",
            "claude-stream-json",
        ),
        "codex": AgentPreset(
            ("codex", "exec", "--json", "--sandbox", "workspace-write", "-"),
            PromptVia.STDIN,
            "--model",
            "codex-json",
        ),
        "gemini": AgentPreset(
            (
                "gemini",
                "--skip-trust",
                "--approval-mode",
                "yolo",
                "--output-format",
                "stream-json",
                "-p",
                "Carry out the instructions given above.",
            ),
            PromptVia.STDIN,
            "--model",
            "gemini-stream-json",
        ),
        "opencode": AgentPreset(
            (
                "opencode",
                "run",
                "--format",
                "json",
                "--title",
                "ralph",
                "Carry out the instructions below.",
            ),
            PromptVia.STDIN,
            "--model",
            "opencode-json",
        ),
        "aider": AgentPreset(
            (
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
            PromptVia.FILE,
            "--model",
            "aider",
        ),
    }
)
"""The built-in presets by name."""
