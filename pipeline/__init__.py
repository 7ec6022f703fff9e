"""ralph-pipeline: AI coding agents in a durable, replayable, event-sourced loop.

The pipeline is ``State -> next_effect (pure) -> Effect -> handler (impure) -> Events -> reduce
(pure) -> State'``. Import the pieces from their packages: :mod:`pipeline.events`,
:mod:`pipeline.core.state`, :mod:`pipeline.core.effects`, :mod:`pipeline.reducers`,
:mod:`pipeline.orchestration`, :mod:`pipeline.core.serialization`, :mod:`pipeline.handlers`,
:mod:`pipeline.engine` and, for property tests, :mod:`pipeline.app.testing`.
"""

__version__ = "0.1.0"

__all__ = ["PipelineError", "WireFormatError", "__version__"]


class PipelineError(Exception):
    """Root of every error ralph-pipeline raises on purpose."""


class WireFormatError(PipelineError, ValueError):
    """Stored or received data does not match the wire contract (names the offending part)."""
