"""The adapter for OpenAI Chat Completions (OpenCode, aider) (pure). NOT YET WRITTEN: a skeleton."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, final

from pipeline.testing.model_server._script import Api, ModelReply, ModelRequest
from pipeline.testing.model_server._wire import Answer, json_answer

__all__ = ["OpenAIChatAdapter"]


@final
class OpenAIChatAdapter:
    """Reads and answers OpenAI Chat Completions (OpenCode, aider) (/v1/chat/completions)."""

    api = Api.OPENAI_CHAT

    def handles(self, method: str, path: str) -> bool:
        """Whether the request is this API's."""
        return False

    def read(self, path: str, body: Mapping[str, Any]) -> ModelRequest:
        """The request's content."""
        raise NotImplementedError

    def answer(self, request: ModelRequest, reply: ModelReply) -> Answer:
        """The reply in this API's format."""
        return json_answer(501, {"error": "not written yet"})
