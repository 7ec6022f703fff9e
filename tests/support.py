"""Helpers shared by the tests."""

from __future__ import annotations

import atexit
import functools
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any

import attrs
from hypothesis import settings

WHOLE_RUNS = settings(max_examples=max(100, settings.default.max_examples // 2), deadline=None)
"""Settings for a property whose every example is a whole simulated run (or a state one
reaches): half the examples the profile draws for cheap properties, never fewer than the dev
profile's 100. Each example checks every step of a run of up to hundreds of steps; the ci
profile's 200 doubled these properties' time (the slowest of the fast suite) for the same
derandomized runs again and again, not for anything a property needed."""


def identical(a: Any, b: Any) -> bool:
    """Equal and of the same types all the way down.

    ``==`` is not enough after decoding: a str enum decoded as a plain ``str`` compares equal.
    Dicts are compared by key, so their order does not matter.
    """
    if type(a) is not type(b):
        return False
    if attrs.has(type(a)):
        return all(identical(getattr(a, f.name), getattr(b, f.name)) for f in attrs.fields(type(a)))
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(
            identical(key, next(k for k in b if k == key)) and identical(a[key], b[key])
            for key in a
        )
    if isinstance(a, tuple | list):
        return len(a) == len(b) and all(identical(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, frozenset | set):
        return a == b and all(type(x) is type(next(y for y in b if y == x)) for x in a)
    return bool(a == b)


def budget(**overrides: int) -> Any:
    """A budget for examples: 3 iterations, 1 review pass, 2 retries, 100..1000 ms backoff."""
    from pipeline.events import Budget

    values = {
        "max_iterations": 3,
        "max_review_passes": 1,
        "max_retries_per_agent": 2,
        "backoff_base_ms": 100,
        "backoff_cap_ms": 1000,
        "max_consecutive_failures": 2,
        "max_consecutive_malformed": 3,
    }
    values.update(overrides)
    return Budget(**values)


def scripted_run(
    answers: dict[str, list[object]] | None = None,
    *,
    budget_: Any = None,
    agents: tuple[str, ...] = ("claude", "codex"),
    rebase_onto: str | None = None,
    gates: tuple[Any, ...] = (),
    limits: Any = None,
    ladders: tuple[Any, ...] = (),
    policy: dict[str, Any] | None = None,
) -> Any:
    """Run the real orchestration and reducers against a simulated world that answers from a
    script (``ScriptedChooser``); every choice not scripted is the happy one. Every loop
    control is on but no event is required: the happy agents publish no topic, and the
    completion gate keeps a run that misses a required event from completing. ``gates``
    (``GateSpec``) run at final validation, ending as ``answers["gate status"]`` says;
    ``limits`` is the run's ``LimitPolicy`` (None: the defaults); ``ladders`` the hats'
    escalation ladders; ``policy`` any other ``LoopPolicy`` fields."""
    import attrs

    from pipeline.engine import RunOptions, run_in_memory
    from pipeline.engine.simulation import (
        ScriptedChooser,
        SimulatedWorld,
        WorldConfig,
        default_chains,
        simulated_policy,
    )

    loop = attrs.evolve(
        simulated_policy(),
        required_events=(),
        gates=gates,
        limits=limits,
        ladders=ladders,
        **(policy or {}),
    )
    config = WorldConfig(
        budget=budget_ or budget(),
        chains=default_chains(agents),
        rebase_onto=rebase_onto,
        loop=loop,
    )
    chooser = ScriptedChooser(answers={what: list(left) for what, left in (answers or {}).items()})
    result = run_in_memory(
        SimulatedWorld(config=config, chooser=chooser), options=RunOptions(max_effects=10_000)
    )
    chooser.check_used()
    return result


def gate_spec(on_failure: Any, name: str = "tests") -> Any:
    """A gate for simulated runs: ``pytest`` at final validation, failing as ``on_failure``
    (a ``GateAction``) says."""
    from pipeline.events import Count, GateSpec

    return GateSpec(name=name, argv=("pytest",), timeout_s=Count(60), on_failure=on_failure)


def names(items: Any) -> list[str]:
    """The class names of ``items``, for readable sequence assertions."""
    return [type(item).__name__ for item in items]


@functools.cache
def _repository_template() -> Path:
    """The ``.git`` folder of an empty repository on ``main`` with a committer and no signing,
    made once per test process (removed at its exit)."""
    folder = Path(tempfile.mkdtemp(prefix="ralph-tests-repository-"))
    atexit.register(shutil.rmtree, folder, ignore_errors=True)
    for args in (
        ["init", "--quiet", "--initial-branch", "main"],
        ["config", "user.name", "test"],
        ["config", "user.email", "test@example.invalid"],
        ["config", "commit.gpgsign", "false"],
    ):
        subprocess.run(["git", *args], cwd=folder, check=True)
    return folder / ".git"


def init_repository(root: Path) -> Path:
    """An empty git repository at ``root`` (made when missing) on ``main``, with a committer
    (``test``) and no signing: what ``git init`` and three ``git config`` calls make, copied
    from one made once per test process (four git processes fewer a repository; a ``.git``
    folder holds no path of its own, so the copy is the same repository)."""
    root.mkdir(parents=True, exist_ok=True)
    shutil.copytree(_repository_template(), root / ".git", symlinks=True)
    return root
