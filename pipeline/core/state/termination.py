"""Why a run ended: the reasons, their stable strings and exit codes (pure data).

The reasons are part of the wire vocabulary (``RunCompleted`` records them), so they are
defined with the other event values and re-exported here for the state's users.
"""

from pipeline.events.values import EXIT_CODES, TerminationReason

__all__ = ["EXIT_CODES", "TerminationReason"]
