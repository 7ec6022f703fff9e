"""The pure core beneath the reducers and orchestration: state, effects, the
configuration, serialization, and the pure policies (the sandbox plan, the tamper screen,
the built-in responses). No I/O: the import contracts in pyproject.toml hold it.
"""
