"""The sandbox's value types in the vocabulary (pure data): which mode a run asked for.

The rules themselves (what is bound where, which variables pass) live in
:mod:`pipeline.core.sandbox`; the log records only what was decided and what happened.
"""

from __future__ import annotations

import enum

__all__ = ["SandboxMode"]


@enum.unique
class SandboxMode(enum.StrEnum):
    """Whether agents run in the sandbox (``[sandbox] mode``)."""

    AUTO = "auto"
    """On where the machine supports it; every start says whether it is on and why not."""
    REQUIRED = "required"
    """On, or the run does not start."""
    OFF = "off"
    """Agents run as they always did."""
