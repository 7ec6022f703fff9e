"""Shared test configuration: hypothesis profiles chosen by ``HYPOTHESIS_PROFILE``, and the
throwaway PostgreSQL server.

``dev`` (the default) runs 100 examples per property; ``ci`` runs more, derandomized, so that
CI is repeatable.
"""

from __future__ import annotations

import compileall
import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

import pipeline.app.testing  # noqa: F401  (registers the value-type strategies)
from tests.postgres import PostgresServer, find_binaries, postgres_server

settings.register_profile(
    "dev",
    max_examples=100,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
# CI draws the same examples every run (derandomized), twice the local runs' many; the local
# runs draw new ones each time. 300 in CI cost the suite about half a minute more than 200
# on 2 cores, with the ten minutes already near.
settings.register_profile(
    "ci",
    max_examples=200,
    deadline=None,
    derandomize=True,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "dev"))


@pytest.fixture(scope="session")
def postgres() -> Iterator[PostgresServer]:
    """A throwaway PostgreSQL server for this test session (one per xdist worker).

    Where no server binaries exist the tests that need one skip, saying so; under CI
    (``CI`` set, and ``.ci/run`` installs the server) they fail instead, so CI never skips.
    """
    binaries = find_binaries()
    if binaries is None:
        reason = "no PostgreSQL server binaries (initdb, pg_ctl); apt-get install postgresql"
        if os.environ.get("CI"):
            pytest.fail(reason)
        pytest.skip(reason)
    with postgres_server(binaries) as server:
        yield server


@pytest.fixture
def postgres_url(postgres: PostgresServer) -> str:
    """The URL of a new, empty database on the session's server."""
    return postgres.new_database()


_FIRST = ("tests/graph/test_graph.py::test_the_declared_edges_are_what_exploring_finds",)
"""The longest tests (the phase exploration, about a minute), run first: started last, they
would leave one worker alone at the end of the suite."""


def pytest_configure(config: pytest.Config) -> None:
    """Compile ``pipeline/`` to bytecode once, before any worker starts, when this environment
    says not to write bytecode (``PYTHONDONTWRITEBYTECODE``).

    Every ``ralph``, scripted agent and worker the tests start is a new interpreter: without
    the bytecode each one compiles every module it imports again, about a third of a short
    command's CPU time. Only the library is compiled, into its ``__pycache__`` folders (which
    git ignores); an out-of-date file is compiled again, an up-to-date one only checked.

    The test processes themselves (this one and each xdist worker) write bytecode too: pytest
    keeps each test module it rewrote for its assertions (in the same ignored folders) only
    where bytecode is written, and rewriting the suite's modules was most of every worker's
    collection (about 6 of its 9 CPU seconds), again at every run. The processes the tests
    start still write none: they inherit the environment, not this flag.
    """
    if not sys.flags.dont_write_bytecode:
        return
    sys.dont_write_bytecode = False
    if not hasattr(config, "workerinput"):
        compileall.compile_dir(Path(__file__).resolve().parent.parent / "pipeline", quiet=1)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Start the longest tests first (see ``_FIRST``), keeping them together on one worker."""
    items.sort(key=lambda item: item.nodeid not in _FIRST)
