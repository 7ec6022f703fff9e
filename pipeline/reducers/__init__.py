"""Reducers: ``reduce(state, event) -> state``, total and pure.

No I/O, clock or randomness: time and ids arrive inside events. An event that does not fit the
state is recorded as an anomaly in the state, never raised and never dropped silently.
"""

from pipeline.reducers._dispatch import fold, reduce, steps
from pipeline.reducers._edges import Edge, phase_changes, phase_edges
from pipeline.reducers._gates import gate_action, screen_action

__all__ = [
    "Edge",
    "fold",
    "gate_action",
    "phase_changes",
    "phase_edges",
    "reduce",
    "screen_action",
    "steps",
]
