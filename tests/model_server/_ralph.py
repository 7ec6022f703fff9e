"""Scripts that play ralph's roles: a model for running ralph pipelines offline (pure).

ralph's prompts start with a heading naming the role (``# Role: planner``) or a topology's hat
(``# Hat: builder``); :func:`by_kind` reads it into the prompt kind (``planning``,
``development``, ``review_fix``, ..., ``hat:builder`` for a hat) and answers
with that kind's :class:`Playbook`, one reply per model turn of the invocation. A request
that is not one of ralph's prompts (a CLI's own side request, such as a title) gets a short
text answer. :func:`fixing_pipeline` is the whole happy path of a run that fixes one file.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Final, final

from attrs import field, frozen

from tests.model_server._script import (
    ModelReply,
    ModelRequest,
    Script,
    Shell,
    WriteFile,
)

__all__ = ["Playbook", "by_kind", "fixing_pipeline", "prompt_kind"]

_HEADINGS: Final = (
    (re.compile(r"^# Role: planner", re.MULTILINE), "planning"),
    (re.compile(r"^# Role: developer \W+ fixing review", re.MULTILINE), "review_fix"),
    (re.compile(r"^# Role: developer", re.MULTILINE), "development"),
    (re.compile(r"^# Role: reviewer", re.MULTILINE), "review"),
    (re.compile(r"^# Role: committer", re.MULTILINE), "commit_message"),
    (re.compile(r"^# Role: fixer", re.MULTILINE), "dev_fix"),
    (re.compile(r"^# Correct the format of your last response", re.MULTILINE), "format_correction"),
)


_HAT: Final = re.compile(r"^# Hat: ([A-Za-z0-9_:-]+)", re.MULTILINE)


def prompt_kind(prompt: str) -> str | None:
    """The kind of ralph prompt ``prompt`` holds (a ``PromptKind`` value, or ``hat:NAME`` for
    a topology hat's), or None."""
    hat = _HAT.search(prompt)
    if hat is not None:
        return f"hat:{hat.group(1)}"
    for pattern, kind in _HEADINGS:
        if pattern.search(prompt):
            return kind
    return None


@final
@frozen(kw_only=True)
class Playbook:
    """What the model does over one invocation: ``steps[turn]`` at each turn, then ``closing``."""

    steps: tuple[ModelReply, ...] = ()
    closing: ModelReply = field(factory=lambda: ModelReply(text="Done."))

    def reply(self, turn: int) -> ModelReply:
        """The reply at ``turn`` (0 is the first call of the invocation)."""
        return self.steps[turn] if turn < len(self.steps) else self.closing


SIDE_REPLY: Final = ModelReply(text="ralph scripted model")
"""The answer to a request that holds none of ralph's prompts."""


def by_kind(playbooks: Mapping[str, Playbook], side: ModelReply = SIDE_REPLY) -> Script:
    """A script answering each of ralph's prompt kinds from its playbook.

    A request with tools is an agent at work; one without (a CLI's title or summary request)
    or of a kind with no playbook gets ``side``.
    """

    def script(request: ModelRequest) -> ModelReply:
        kind = prompt_kind(request.prompt)
        book = playbooks.get(kind) if kind is not None else None
        if book is None:
            return side
        return book.reply(request.turn)

    return script


def _steps(*actions: Shell | WriteFile) -> tuple[ModelReply, ...]:
    return tuple(ModelReply(actions=(action,)) for action in actions)


def fixing_pipeline(
    path: str,
    content: str,
    *,
    topic: str = "build.done",
    payload: str = "fixed",
    emit: str = '"$RALPH_BIN" emit',
    out_dir: str = ".agent/out",
) -> Mapping[str, Playbook]:
    """Playbooks for a run that writes ``content`` to ``path`` and is done in one iteration.

    The planner writes a plan; the developer writes the file, publishes ``topic`` from its
    shell with ``emit`` and reports ``completed``; the reviewer finds nothing; the committer
    writes a message. One action per turn, as a cautious model would.
    """
    return {
        "planning": Playbook(
            steps=_steps(WriteFile(path=f"{out_dir}/plan.md", content=f"1. Fix {path}\n"))
        ),
        "development": Playbook(
            steps=_steps(
                WriteFile(path=path, content=content),
                Shell(f"{emit} {topic} '{payload}'"),
                WriteFile(path=f"{out_dir}/status", content=f"completed\nFixed {path}.\n"),
            )
        ),
        "review_fix": Playbook(
            steps=_steps(
                WriteFile(path=f"{out_dir}/status", content="completed\nNothing to fix.\n")
            )
        ),
        "review": Playbook(steps=_steps(WriteFile(path=f"{out_dir}/issues.md", content="\n"))),
        "commit_message": Playbook(
            steps=_steps(WriteFile(path=f"{out_dir}/commit-message", content=f"Fix {path}\n"))
        ),
    }
