"""The checkpoint format: a folded state, the sequence it covers, a version and a checksum (pure).

A checkpoint is only a cache of ``fold(log[:sequence])``: one that fails its checksum or has an
unknown format is reported and ignored, and the state is rebuilt from the log instead.
"""

from __future__ import annotations

import hashlib
from typing import Final, final

from attrs import frozen

from pipeline import PipelineError, WireFormatError
from pipeline.core.serialization._codec import decode_state, encode_state
from pipeline.core.state import PipelineState

__all__ = [
    "CHECKPOINT_FORMAT",
    "CheckpointError",
    "EncodedCheckpoint",
    "checkpoint_state",
    "encode_checkpoint",
]

CHECKPOINT_FORMAT: Final = 5
"""The format version written with every checkpoint.

2: the state holds the loop policy and the loop-control counters (event schema 4). A format-1
checkpoint is reported and skipped; the run's log, upcast, rebuilds the state instead.
3: the counters of the retired events (continuation, malformed responses, loop recoveries)
left the state (event schema 8); an older checkpoint is skipped the same way.
4: the progress keeps where a stopped run goes on (``ResumePoint``) and its dev-fix task
(``DevFixTask``) as records instead of five loose fields.
5: the hooks keep the last invocation their after-invocation hooks watch (``AfterInvocation``),
which a format-4 checkpoint lacks; it is skipped and the log rebuilds the state."""


class CheckpointError(PipelineError, ValueError):
    """A stored checkpoint cannot be used (bad checksum, unknown format, undecodable state)."""


@final
@frozen(kw_only=True)
class EncodedCheckpoint:
    """A checkpoint as stored: the state covering the first ``sequence`` events, encoded."""

    sequence: int
    format_version: int
    checksum: str
    body: bytes


def _checksum(body: bytes) -> str:
    return hashlib.sha256(body).hexdigest()


def encode_checkpoint(state: PipelineState) -> EncodedCheckpoint:
    """The checkpoint of ``state`` (which covers ``state.sequence`` events)."""
    body = encode_state(state)
    return EncodedCheckpoint(
        sequence=state.sequence,
        format_version=CHECKPOINT_FORMAT,
        checksum=_checksum(body),
        body=body,
    )


def checkpoint_state(checkpoint: EncodedCheckpoint, what: str) -> PipelineState:
    """The state in ``checkpoint``, verified; :class:`CheckpointError` names what is wrong."""
    if checkpoint.format_version != CHECKPOINT_FORMAT:
        raise CheckpointError(
            f"{what}: unknown checkpoint format {checkpoint.format_version} "
            f"(this release reads format {CHECKPOINT_FORMAT})"
        )
    if _checksum(checkpoint.body) != checkpoint.checksum:
        raise CheckpointError(f"{what}: checksum mismatch, the checkpoint is corrupt")
    try:
        state = decode_state(checkpoint.body, what=what)
    except WireFormatError as error:
        raise CheckpointError(str(error)) from error
    if state.sequence != checkpoint.sequence:
        raise CheckpointError(
            f"{what}: holds a state of {state.sequence} events but claims {checkpoint.sequence}"
        )
    return state
