"""Guiding a run while it goes on: ``ralph guide`` and its Python API (I/O).

The guidance is kept in the run's event store; before the run makes its next prompt it takes
in what is new as ``GuidanceGiven`` facts, and the chosen hat's next prompt carries it. A run
that is stopped (interrupted, or waiting for a person) takes it in when it is resumed, so
nothing given is lost. The store is out of a sandboxed agent's reach: an agent cannot guide
itself.
"""

from __future__ import annotations

from pathlib import Path
from typing import Final

from pipeline import PipelineError
from pipeline.core.state import Phase, PipelineState, is_terminal
from pipeline.engine._durable import load_state
from pipeline.engine._stores import existing_store, storable
from pipeline.events import Role, RunId
from pipeline.handlers.store import give_guidance, open_store_at

__all__ = ["MAX_GUIDANCE_CHARS", "GuidanceError", "guidable_hats", "guide"]

MAX_GUIDANCE_CHARS: Final = 4_000
"""The longest guidance: a prompt's paragraph, not a second PROMPT.md."""


class GuidanceError(PipelineError, ValueError):
    """The guidance cannot be given (empty, too long, not text a store keeps, an unknown hat,
    or the run has ended)."""


def guidable_hats(state: PipelineState) -> tuple[str, ...]:
    """The names ``--hat`` takes for the run of ``state``: its roles, its hats' names, and its
    topology's hats, in that order, each once."""
    if state.run is None:
        return ()
    loop = state.run.loop
    names = [hat.role.value for hat in loop.hats] + [hat.name for hat in loop.hats]
    if loop.topology is not None:
        names += [hat.name for hat in loop.topology.hats]
    return tuple(dict.fromkeys(names))


_PLANNING: Final = frozenset({Phase.NOT_STARTED, Phase.PLANNING})
"""The phases in which the planner has yet to work."""


def _planner(state: PipelineState, hat: str) -> bool:
    """Whether ``hat`` names the planner's hat of the run of ``state``."""
    planner = None if state.run is None else state.run.loop.hat(Role.PLANNER)
    return hat == Role.PLANNER.value or (planner is not None and hat == planner.name)


def guide(
    root: Path,
    text: str,
    hat: str | None = None,
    run_id: str | None = None,
    store: str | None = None,
) -> tuple[RunId, int]:
    """Keep ``text`` as guidance for hat ``hat`` (None: the next working prompt) of run
    ``run_id`` (default: the latest) in ``store`` (default: the workspace's); returns the run
    and the guidance's number. Raises :class:`GuidanceError` for bad guidance, an unknown hat,
    a planner past planning or a run that has ended, and
    :class:`~pipeline.handlers.store.UnknownRunError` for a run the store does not hold."""
    if not text.strip():
        raise GuidanceError("the guidance is empty")
    storable(text, "the guidance", GuidanceError)
    if len(text) > MAX_GUIDANCE_CHARS:
        raise GuidanceError(
            f"the guidance is {len(text)} characters; at most {MAX_GUIDANCE_CHARS} reach a prompt"
        )
    location = existing_store(root, store, GuidanceError)
    with open_store_at(location, must_exist=True) as opened:
        chosen = opened.choose_run(run_id)
        state, _ = load_state(opened, chosen)
        if is_terminal(state) and state.phase is not Phase.INTERRUPTED:
            ended = state.termination.value if state.termination else state.phase.value
            raise GuidanceError(
                f"run {chosen} has ended ({ended}): guidance reaches a run that goes on"
            )
        hats = guidable_hats(state)
        if hat is not None and hat not in hats:
            raise GuidanceError(
                f"run {chosen} has no hat {hat!r}; its hats: {', '.join(hats) or 'none'}"
            )
        if hat is not None and _planner(state, hat) and state.phase not in _PLANNING:
            raise GuidanceError(
                f"run {chosen} is past planning: its planner works no more; guide the "
                "developer, or leave out --hat for the next working prompt"
            )
        number = give_guidance(opened, chosen, text, hat)
    return chosen, number
