"""A scripted model server: run the real agent CLIs offline, against a script instead of a model.

It speaks, on 127.0.0.1, the Anthropic Messages API (Claude Code), the OpenAI Responses API
(Codex), OpenAI Chat Completions (OpenCode, aider) and the Gemini API (Gemini CLI), streaming
and not, with tool calls. What it answers comes from a script: a Python callable
``(ModelRequest) -> ModelReply`` or a rules file (:func:`load_rules`). Use it to test your own
pipelines, prompts and hats against the real agent CLIs without a model or a network::

    from tests.model_server import ModelServer, by_kind, fixing_pipeline

    with ModelServer(by_kind(fixing_pipeline("app.py", "x = 1\\n"))) as server:
        ...  # point the CLI at server.url (see docs/architecture/agents.md), run ralph

``python -m tests.model_server SCRIPT.toml [--port N]`` serves a rules file.
"""

from tests.model_server._ralph import Playbook, by_kind, fixing_pipeline, prompt_kind
from tests.model_server._rules import Rule, RulesScript, ScriptFileError, load_rules
from tests.model_server._script import (
    Action,
    Api,
    ApiError,
    McpCall,
    ModelReply,
    ModelRequest,
    Script,
    Shell,
    ToolCall,
    ToolSpec,
    Usage,
    WriteFile,
)
from tests.model_server._server import Exchange, ModelServer, serve
from tests.model_server._tools import NoToolError, concrete_call

__all__ = [
    "Action",
    "Api",
    "ApiError",
    "Exchange",
    "McpCall",
    "ModelReply",
    "ModelRequest",
    "ModelServer",
    "NoToolError",
    "Playbook",
    "Rule",
    "RulesScript",
    "Script",
    "ScriptFileError",
    "Shell",
    "ToolCall",
    "ToolSpec",
    "Usage",
    "WriteFile",
    "by_kind",
    "concrete_call",
    "fixing_pipeline",
    "load_rules",
    "prompt_kind",
    "serve",
]
