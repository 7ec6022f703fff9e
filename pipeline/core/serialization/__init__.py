"""Serialization of events, effects and state through one cattrs converter (pure).

No hand-written ``to_dict``: cattrs generates the code, configured once in ``_converter``.
"""

from pipeline.core.serialization._checkpoint import (
    CHECKPOINT_FORMAT,
    CheckpointError,
    EncodedCheckpoint,
    checkpoint_state,
    encode_checkpoint,
)
from pipeline.core.serialization._codec import (
    CONVERTER,
    decode_effect,
    decode_event,
    decode_state,
    encode_effect,
    encode_event,
    encode_state,
    structure,
    unstructure_event,
)
from pipeline.core.serialization._converter import configure_primitives, make_converter
from pipeline.core.serialization._upcasting import (
    UPCASTERS,
    Judge,
    Upcaster,
    decode_stored_event,
    upcast,
)

__all__ = [
    "CHECKPOINT_FORMAT",
    "CONVERTER",
    "UPCASTERS",
    "CheckpointError",
    "EncodedCheckpoint",
    "Judge",
    "Upcaster",
    "checkpoint_state",
    "configure_primitives",
    "decode_effect",
    "decode_event",
    "decode_state",
    "decode_stored_event",
    "encode_checkpoint",
    "encode_effect",
    "encode_event",
    "encode_state",
    "make_converter",
    "structure",
    "unstructure_event",
    "upcast",
]
