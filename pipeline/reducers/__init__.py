"""Reducers: ``reduce(state, event) -> state``, total and pure.

No I/O, clock or randomness: time and ids arrive inside events. An event that does not fit the
state is recorded as an anomaly in the state, never raised and never dropped silently.
"""

from pipeline.reducers._dispatch import fold, reduce

__all__ = ["fold", "reduce"]
