"""Known ways a configured agent CLI fails before it does any work, or loses something
(I/O: reads the files a CLI's checks ask for; the checks themselves are pure, each declared
by its CLI's module in ``pipeline.core.agents``).

Each pitfall is a line naming the agent and what will go wrong, and its fix. The workspace
checks the agents its chains use before a run starts (the pitfalls that block a run), so a
run that could only fail (every attempt, every retry, every dev-fix pass) ends at once with
the fix instead; ``ralph doctor`` checks them all.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Mapping
from pathlib import Path
from typing import Final

from pipeline.core.agents import Pitfall, Situation, preset_for
from pipeline.core.config import AgentConfig

__all__ = ["found_pitfalls", "known_pitfalls"]

_LIMIT: Final = 1 << 20
"""The largest file a check reads: a CLI's settings are a few KiB."""


def _read(path: str) -> bytes | None:
    """The bytes of the regular file ``path`` (None: absent, unreadable, not a regular file
    or too large); opened without blocking, so a FIFO planted there cannot hang a check."""
    try:
        descriptor = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        with os.fdopen(descriptor, "rb") as handle:
            if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
                return None
            data = handle.read(_LIMIT + 1)
    except OSError:
        return None
    return data if len(data) <= _LIMIT else None


def found_pitfalls(
    name: str,
    config: AgentConfig,
    environ: Mapping[str, str],
    is_root: bool,
    root: Path | None = None,
) -> tuple[tuple[Pitfall, str, str], ...]:
    """Each pitfall agent ``name`` would hit if started now in ``root`` (default: here), with
    what goes wrong and its fix.

    ``environ`` is the environment ralph runs in (the agent gets it plus ``config.env``);
    ``is_root``: whether ralph runs as root (agents inherit its user).
    """
    argv = config.invocation().argv
    preset = preset_for(config.preset, argv)
    if preset is None:
        return ()
    situation = Situation(
        name=name,
        argv=argv,
        environ={**environ, **config.env},
        is_root=is_root,
        root=str((root or Path.cwd()).resolve()),
        read=_read,
    )
    found = ((pitfall, pitfall.found(situation)) for pitfall in preset.pitfalls)
    return tuple((pitfall, *said) for pitfall, said in found if said is not None)


def known_pitfalls(
    name: str, config: AgentConfig, environ: Mapping[str, str], is_root: bool
) -> tuple[str, ...]:
    """The known problems that would end every invocation of agent ``name`` if started now
    (the pitfalls that block a run), each one line with its fix."""
    found = found_pitfalls(name, config, environ, is_root)
    return tuple(problem for pitfall, problem, _ in found if pitfall.blocks_run)
