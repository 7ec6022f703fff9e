"""Shared test configuration: hypothesis profiles chosen by ``HYPOTHESIS_PROFILE``.

``dev`` (the default) runs 100 examples per property; ``ci`` runs more, derandomized, so that
CI is repeatable.
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

import pipeline.testing  # noqa: F401  (registers the value-type strategies)

settings.register_profile(
    "dev",
    max_examples=100,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.register_profile(
    "ci",
    max_examples=300,
    deadline=None,
    derandomize=True,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "dev"))
