"""Engine step overhead next to LangGraph and Apache Burr (peers from the ``bench`` extra).

Every engine runs the same work: a loop of N steps whose step does no real work, with a tiny
state. Durable contenders make every step durable in SQLite before the next one (ralph: its
event store, WAL with ``synchronous=FULL``, one transaction per step's facts, synced unless the
effect is redoable; LangGraph:
``SqliteSaver``; Burr: ``SQLitePersister``); the others keep state in memory (ralph's in-memory
loop, LangGraph without a checkpointer, Burr without a persister). ralph with
``durability = "process"`` (committed, never synced) is shown beside them. For ralph a step is one
effect: orchestration decides it, the simulated world carries it out with no work, its facts
are stored and folded. Contenders alternate, ``repeats`` times; medians.

A peer that is not installed is reported as such; ``pip install -e '.[bench]'`` installs them.
"""

from __future__ import annotations

import sqlite3
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypedDict

from benchmarks.workload import LONG_RUN_BUDGET, NOOP_WEIGHTS
from pipeline.engine import LoopBoundExceededError, RunOptions, run_durable, run_in_memory
from pipeline.engine.simulation import RandomChooser, SimulatedWorld, WorldConfig, default_chains
from pipeline.handlers.store import SqliteEventStore

__all__ = ["CONTENDERS", "run_peer_benchmark"]

Contender = Callable[[int, Path], float]
"""Runs ``n`` steps (using files under the given directory) and returns steps per second."""


def _world(name: str) -> SimulatedWorld:
    # Every agent succeeds and iterations stay partial: the run goes on as long as asked.
    config = WorldConfig(
        budget=LONG_RUN_BUDGET, chains=default_chains(("a", "b")), rebase_onto=None, run_id=name
    )
    return SimulatedWorld(config=config, chooser=RandomChooser(seed=1, weights=dict(NOOP_WEIGHTS)))


def ralph_durable(n: int, directory: Path, synchronous: str = "FULL") -> float:
    """ralph's durable loop: every step's facts committed before the next effect (synced to
    disk when a handler acted on them, with the default durability)."""
    with SqliteEventStore(directory / "ralph.db", synchronous=synchronous) as store:
        start = time.perf_counter()
        run = run_durable(store, _world("durable"), options=RunOptions(max_effects=n))
        elapsed = time.perf_counter() - start
    if run.effects != n:
        raise AssertionError(f"the run stopped after {run.effects} of {n} steps")
    return n / elapsed


def ralph_durable_process(n: int, directory: Path) -> float:
    """ralph's durable loop with ``[store] durability = "process"``: committed, never synced."""
    return ralph_durable(n, directory, "NORMAL")


def ralph_in_memory(n: int, _directory: Path) -> float:
    """ralph's loop over the in-memory store (the durable loop, nothing synced or written)."""
    start = time.perf_counter()
    try:
        result = run_in_memory(_world("memory"), options=RunOptions(max_effects=n))
    except LoopBoundExceededError:
        # Asked to stop after n steps, the loop says so by raising: n steps were taken.
        return n / (time.perf_counter() - start)
    raise AssertionError(f"the run stopped after {len(result.effects)} of {n} steps")


class Counter(TypedDict):
    """LangGraph's state in the loop (at module level: LangGraph reads the hints)."""

    n: int


def _langgraph(n: int, checkpointer: Any) -> float:
    from langgraph.graph import END, StateGraph

    def step(state: Counter) -> dict[str, int]:
        return {"n": state["n"] + 1}

    def route(state: Counter) -> str:
        return "step" if state["n"] < n else END

    graph = StateGraph(Counter)
    graph.add_node("step", step)
    graph.set_entry_point("step")
    graph.add_conditional_edges("step", route)
    app = graph.compile(checkpointer=checkpointer)
    config = {"configurable": {"thread_id": "bench"}, "recursion_limit": n + 10}
    start = time.perf_counter()
    final = app.invoke({"n": 0}, config)
    elapsed = time.perf_counter() - start
    assert final["n"] == n
    return n / elapsed


def langgraph_sqlite(n: int, directory: Path) -> float:
    """LangGraph with its SQLite checkpointer (a checkpoint per step)."""
    from langgraph.checkpoint.sqlite import SqliteSaver

    connection = sqlite3.connect(directory / "langgraph.db", check_same_thread=False)
    try:
        return _langgraph(n, SqliteSaver(connection))
    finally:
        connection.close()


def langgraph_memory(n: int, _directory: Path) -> float:
    """LangGraph with no checkpointer."""
    return _langgraph(n, None)


def _burr(n: int, persister: Any) -> float:
    from burr.core import ApplicationBuilder, State, default, expr
    from burr.core.action import action

    @action(reads=["n"], writes=["n"])
    def step(state: State) -> State:
        return state.update(n=state["n"] + 1)

    @action(reads=[], writes=[])
    def done(state: State) -> State:
        return state

    builder = (
        ApplicationBuilder()
        .with_actions(step=step, done=done)
        .with_transitions(("step", "step", expr(f"n < {n}")), ("step", "done", default))
        .with_state(n=0)
        .with_entrypoint("step")
    )
    if persister is not None:
        persister.initialize()
        builder = builder.with_state_persister(persister).with_identifiers(app_id="bench")
    app = builder.build()
    start = time.perf_counter()
    _action, _result, state = app.run(halt_after=["done"])
    elapsed = time.perf_counter() - start
    assert state["n"] == n
    return n / elapsed


def burr_sqlite(n: int, directory: Path) -> float:
    """Burr with its SQLite persister (the state saved after every step)."""
    from burr.core.persistence import SQLitePersister

    persister = SQLitePersister(str(directory / "burr.db"))
    try:
        return _burr(n, persister)
    finally:
        persister.connection.close()


def burr_memory(n: int, _directory: Path) -> float:
    """Burr with no persister."""
    return _burr(n, None)


PROCESS = "ralph durable, durability = process (committed, not synced)"

CONTENDERS: dict[str, tuple[Contender, str | None]] = {
    "ralph durable (SQLite, every step committed)": (ralph_durable, None),
    PROCESS: (ralph_durable_process, None),
    "ralph in memory": (ralph_in_memory, None),
    "LangGraph + SqliteSaver": (langgraph_sqlite, "langgraph.checkpoint.sqlite"),
    "LangGraph, no checkpointer": (langgraph_memory, "langgraph"),
    "Burr + SQLitePersister": (burr_sqlite, "burr"),
    "Burr in memory": (burr_memory, "burr"),
}
"""Each contender, and the module that must import for it to run (None: always)."""


def _installed(module: str | None) -> bool:
    if module is None:
        return True
    try:
        __import__(module)
    except ImportError:
        return False
    return True


def run_peer_benchmark(sizes: list[int], repeats: int) -> dict[str, Any]:
    """Steps per second of every installed contender at each size: medians of alternating
    runs, each run in a fresh directory."""
    available = {name: run for name, (run, module) in CONTENDERS.items() if _installed(module)}
    missing = [name for name in CONTENDERS if name not in available]
    figures: dict[str, dict[str, float]] = {}
    for n in sizes:
        samples: dict[str, list[float]] = {name: [] for name in available}
        for _ in range(repeats):
            for name, run in available.items():
                with tempfile.TemporaryDirectory() as directory:
                    samples[name].append(run(n, Path(directory)))
        figures[str(n)] = {name: round(statistics.median(s)) for name, s in samples.items()}
    largest = figures[str(max(sizes))]
    ours = largest["ralph durable (SQLite, every step committed)"]
    goals: dict[str, bool | None] = {
        "ralph durable >= 10x LangGraph + SqliteSaver": (
            ours >= 10 * largest["LangGraph + SqliteSaver"]
            if "LangGraph + SqliteSaver" in largest
            else None
        ),
        "ralph durable > Burr in memory": (
            ours > largest["Burr in memory"] if "Burr in memory" in largest else None
        ),
        "(not the goal's durability) durability = process >= 10x LangGraph + SqliteSaver": (
            largest[PROCESS] >= 10 * largest["LangGraph + SqliteSaver"]
            if "LangGraph + SqliteSaver" in largest
            else None
        ),
    }
    return {
        "sizes": sizes,
        "repeats": repeats,
        "steps_per_second": figures,
        "not_installed": missing,
        "goals": goals,
    }
