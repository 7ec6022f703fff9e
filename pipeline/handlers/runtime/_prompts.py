"""Rendering the prompt templates shipped in package data (reads package data only).

Templates use ``string.Template`` placeholders (``$user_prompt``, ``$plan``, ``$issues``,
``$last_error``, ``$iteration``, ``$review_pass``, ``$out_dir``); substitution is safe, so a
``$`` in the user's prompt or an agent's report is copied as it is.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import cache
from importlib import resources
from string import Template

from pipeline.events import PromptKind

__all__ = ["render_prompt", "template_text"]


@cache
def template_text(kind: PromptKind) -> str:
    """The template of ``kind``, from the package's ``templates/`` folder."""
    return (resources.files(__package__) / "templates" / f"{kind.value}.md").read_text("utf-8")


def render_prompt(kind: PromptKind, values: Mapping[str, str]) -> str:
    """The ``kind`` prompt with ``values`` filled in; the template's text is kept verbatim
    around them, and values are never themselves expanded."""
    return Template(template_text(kind)).safe_substitute(values)
