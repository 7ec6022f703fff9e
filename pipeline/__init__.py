"""ralph-pipeline: AI coding agents in a durable, replayable, event-sourced loop.

The pipeline is ``State -> next_effect (pure) -> Effect -> handler (impure) -> Events -> reduce
(pure) -> State'``. Import the pieces from their packages: :mod:`pipeline.events`,
:mod:`pipeline.state`, :mod:`pipeline.effects`, :mod:`pipeline.reducers`,
:mod:`pipeline.orchestration`, :mod:`pipeline.serialization`, :mod:`pipeline.handlers`,
:mod:`pipeline.engine` and, for property tests, :mod:`pipeline.testing`.
"""

__version__ = "0.1.0"

__all__ = ["__version__"]
