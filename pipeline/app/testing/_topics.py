"""Hypothesis strategies for the names agents and topics are made of."""

from __future__ import annotations

import functools

from hypothesis import strategies as st

from pipeline.events import AgentName

__all__ = ["ID_ALPHABET", "agent_names", "topic_patterns", "topics"]

ID_ALPHABET = st.characters(codec="ascii", categories=("L", "N"), include_characters="-_.")
"""The characters of ids drawn for tests: run ids, agent names, question and effect ids."""


@functools.cache
def agent_names() -> st.SearchStrategy[AgentName]:
    """Agent names of ASCII letters, digits and ``- _ .``."""
    return st.text(ID_ALPHABET, min_size=1, max_size=12).map(AgentName)


_SEGMENTS = st.sampled_from(["build", "review", "plan", "task", "done", "x", "human", "interact"])


@functools.cache
def topics() -> st.SearchStrategy[str]:
    """Topics of one to three segments from a small alphabet, so that patterns often match."""
    return st.lists(_SEGMENTS, min_size=1, max_size=3).map(".".join)


@functools.cache
def topic_patterns() -> st.SearchStrategy[str]:
    """Well-formed topic patterns: ``*`` alone, or segments that may be ``*`` or ``**``."""
    segment = _SEGMENTS | st.just("*") | st.just("**")
    return st.just("*") | st.lists(segment, min_size=1, max_size=3).map(".".join)
