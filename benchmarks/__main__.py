"""``python -m benchmarks [--quick] [--output DIR]``: run the benchmarks, write the results.

Writes ``RESULTS.md`` (a table, the goals and the machine) and ``results.json`` (raw numbers)
into ``DIR`` (default: this folder).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path
from typing import Any

from benchmarks.cli import render_cli, run_cli_benchmark
from benchmarks.durable import run_durable_benchmarks
from benchmarks.fold import run_fold_benchmark
from benchmarks.invocation import run_invocation_benchmark
from benchmarks.peers import run_peer_benchmark
from benchmarks.reader import run_reader_benchmark
from benchmarks.scaleout import run_scaleout_benchmark
from benchmarks.serialization import run_serialization_benchmark

HERE = Path(__file__).resolve().parent


def machine() -> dict[str, Any]:
    """The facts a reader needs to compare figures across machines."""
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    packages = {}
    for name in ("attrs", "cattrs", "orjson", "hypothesis"):
        try:
            packages[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            packages[name] = "not installed"
    return {
        "cpu": cpu,
        "cores": os.cpu_count(),
        "python": sys.version.split()[0],
        "implementation": platform.python_implementation(),
        "packages": packages,
        "date": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
    }


def render(results: dict[str, Any]) -> str:
    """RESULTS.md from the raw results."""
    m = results["machine"]
    f = results["fold"]
    ours = next(iter(f["events_per_second"].values()))
    lines = [
        "# Benchmark results",
        "",
        f"Written by `python -m benchmarks{' --quick' if results['quick'] else ''}` on "
        f"{m['date']}: {m['cpu']}, {m['cores']} cores, {m['implementation']} {m['python']}, "
        + ", ".join(f"{k} {v}" for k, v in m["packages"].items())
        + "."
        + (
            f" Sections rerun then with `--only`: {', '.join(results['rerun'])}; the others"
            " are from the run before."
            if results.get("rerun")
            else ""
        ),
        "",
        "## Reducer fold",
        "",
        f"{f['events']:,} events from long simulated runs (a realistic mix: invocations, topics, "
        f"prompts, checkpoints, commits, iterations), folded {f['repeats']} times by each "
        "contender in turn; medians. The fold ended with "
        f"{f['anomalies_in_fold']} anomalies (the log is consistent).",
        "",
        "| contender | events/s |",
        "| --- | ---: |",
    ]
    for name, rate in f["events_per_second"].items():
        lines.append(f"| {name} | {rate:,} |")
    lines += [
        "",
        "| goal | figure | met |",
        "| --- | --- | --- |",
        f"| at least 500,000 events/s | {ours:,} | {'yes' if f['goal_met'] else 'no'} |",
        f"| (issue 19) within 1.5x of the match + evolve floor | ratio "
        f"{f['ratio_to_evolve_floor']} | {'yes' if f['within_1_5x_of_evolve_floor'] else 'no'} |",
        f"| (issue 8) within 2x of the mutable-dict floor | ratio {f['ratio_to_dict_floor']} "
        f"| {'yes' if f['ratio_to_dict_floor'] >= 0.5 else 'no'} |",
        "",
    ]
    durable = results.get("durable")
    if durable is not None:
        met = durable["full_replay_1e6_under_3s"]
        replay_goal = "not measured (smaller run)" if met is None else ("yes" if met else "no")
        steps = durable["steps"]
        lines += [
            "## Durable loop",
            "",
            "Every step's facts committed (WAL, `synchronous=FULL`; redoable effects' facts and",
            "checkpoints unsynced until the next synced commit) before the next effect, with a",
            "handler that does no real work; the floor commits (and syncs) one bare row per",
            "transaction.",
            "",
            "| figure | per second |",
            "| --- | ---: |",
            *[f"| {name} | {value:,} |" for name, value in steps.items()],
            "",
            "Replay of a run from the SQLite store: full replay (read, decode, upcast, fold) next",
            "to the floor (bare `SELECT` + `orjson.loads`), and resume from a checkpoint 100",
            "events before the end.",
            "",
            "| events | full replay (s) | floor (s) | resume from checkpoint (ms) | "
            "replay peak RSS growth (MiB) | store (MiB) |",
            "| ---: | ---: | ---: | ---: | ---: | ---: |",
            *[
                f"| {row['events']:,} | {row['full_replay_s']} | "
                f"{row['floor_read_and_loads_s']} | {row['resume_from_checkpoint_ms']} | "
                f"{row.get('replay_peak_rss_growth_mb', '-')} | {row.get('store_mb', '-')} |"
                for row in durable["replay"]
            ],
            "",
            "| goal | met |",
            "| --- | --- |",
            f"| resume time flat (within 20%) as the history grows | "
            f"{'yes' if durable['resume_flat_within_20_percent'] else 'no'} |",
            f"| (issue 8) full replay of 10^6 events under 3 s | {replay_goal} |",
            "| (issue 8) replay memory does not hold the history (peak RSS growth under a quarter "
            f"of the store, or 50 MiB) | {'yes' if durable.get('replay_memory_flat') else 'no'} |",
            "",
        ]
    reader = results.get("reader")
    if reader is not None:
        rates = reader["lines_per_second"]
        peaks = reader["peak_bytes"]
        lines += [
            "## Events-file reader",
            "",
            f"{reader['lines']:,} lines ({reader['file_bytes']:,} bytes) as agents write them "
            "with `ralph emit` (text and JSON payloads, one line in a hundred malformed), read",
            f"in the same process, alternating, {reader['repeats']} times; medians.",
            "",
            "| reader | lines/s |",
            "| --- | ---: |",
            *[f"| {name} | {rate:,} |" for name, rate in rates.items()],
            "",
            "| peak memory (tracemalloc) | bytes |",
            "| --- | ---: |",
            *[f"| {name} | {value:,} |" for name, value in peaks.items()],
            "",
            "| goal | figure | met |",
            "| --- | --- | --- |",
            f"| at least {reader['goal_ratio']} of the bare loop | ratio "
            f"{reader['ratio_to_bare_loop']} | {'yes' if reader['goal_met'] else 'no'} |",
            f"| peak memory does not grow with the file | "
            f"{peaks['whole file']:,} bytes for 10x the lines | "
            f"{'yes' if reader['peak_flat'] else 'no'} |",
            "",
        ]
    peers = results.get("peers")
    if peers is not None:
        lines += _render_peers(peers)
    serialization = results.get("serialization")
    if serialization is not None:
        lines += _render_serialization(serialization)
    scaleout = results.get("scaleout")
    if scaleout is not None:
        lines += _render_scaleout(scaleout)
    invocation = results.get("invocation")
    if invocation is not None:
        lines += _render_invocation(invocation)
    cli = results.get("cli")
    if cli is not None:
        lines += render_cli(cli)
    notes = HERE / "NOTES.md"
    if notes.exists():
        lines += [notes.read_text().rstrip(), ""]
    return "\n".join(lines)


def _render_serialization(s: dict[str, Any]) -> list[str]:
    """The serialization section: our converter next to bare orjson on plain dicts."""
    lines = [
        "## Serialization",
        "",
        f"{s['events']:,} events and {s['state_round_trips']:,} states of growing runs, each",
        "encoded and decoded through the cattrs converter (tags, strict types, validators) and,",
        "as the floor, the equivalent plain dicts through bare orjson; alternating,",
        f"{s['repeats']} times, medians.",
        "",
        "| round trips | per second |",
        "| --- | ---: |",
    ]
    lines += [f"| {name} | {rate:,} |" for name, rate in s["round_trips_per_second"].items()]
    lines += [
        "",
        f"Events at {s['ratio_events']}x the floor, states at {s['ratio_states']}x.",
        "",
    ]
    return lines


def _render_invocation(s: dict[str, Any]) -> list[str]:
    """The engine's time per agent invocation next to the bare spawn of the agent, with the
    sandbox off and (where it works) on."""
    verdict = "yes" if s["goal_met"] else "no"
    on = s.get("sandboxed")
    lines = [
        "## The engine's time per agent invocation",
        "",
        f"Whole pipelines with a no-op agent (`sh` writing every role's report), {s['runs']}",
        f"runs of {s['invocations_per_run']} invocations, in a real git workspace with a SQLite",
        "store syncing to disk (medians). ralph's whole share is the run's wall time per",
        "invocation less a bare spawn of the agent command (what the agent alone takes): what a",
        "person waits for beyond the agent, the process runner's reaper included. The engine's",
        "share beside it leaves out the agents' process time as ralph measures it, which holds",
        "the reaper each command runs behind (measured apart below).",
        "",
        "| measure | sandbox off, ms | sandbox on, ms |",
        "| --- | ---: | ---: |",
        f"| ralph's whole share, per invocation | {s.get('ralph_ms_per_invocation', '?')} | "
        f"{on.get('ralph_ms_per_invocation', '?') if on else 'n/a'} |",
        "| the same from the first agent's start to the run's end (no store creation) | "
        f"{s.get('ralph_ms_from_first_invocation', '?')} | "
        f"{on.get('ralph_ms_from_first_invocation', '?') if on else 'n/a'} |",
        f"| the engine's share, per invocation (all but the agent process) | "
        f"{s['engine_ms_per_invocation']} | {on['engine_ms_per_invocation'] if on else 'n/a'} |",
        "| the same from the first agent's start to the run's end | "
        f"{s.get('engine_ms_from_first_invocation', '?')} | "
        f"{on.get('engine_ms_from_first_invocation', '?') if on else 'n/a'} |",
        f"| the agent process, per invocation (reaper included) | "
        f"{s['agent_process_ms_per_invocation']} | "
        f"{on['agent_process_ms_per_invocation'] if on else 'n/a'} |",
        f"| spawning the agent command alone | {s['bare_spawn_ms']} | |",
        f"| `run_process` of `true` (behind its reaper) | {s.get('run_process_true_ms', '?')} | |",
        f"| `subprocess.run` of `true` | {s.get('bare_true_ms', '?')} | |",
        "",
        f"With the sandbox off ralph's whole share is {s['ratio']}x a bare spawn (the engine's "
        f"share alone {s.get('engine_ratio', '?')}x); goal under 3x: {verdict}.",
    ]
    if "load_average" in s:
        lines.append(
            f"The load average was {s['load_average']} on {os.cpu_count()} cores: above about "
            "1, other work shares the cores and every wall figure above grows with it."
        )
    if on is None:
        lines.append("The sandbox does not work on this machine: its column is not measured.")
    return [*lines, ""]


def _render_scaleout(s: dict[str, Any]) -> list[str]:
    """The scale-out section: PostgreSQL appends and workers draining one queue."""
    lines = ["## Scale-out on PostgreSQL", ""]
    if "skipped" in s:
        return [*lines, f"Not measured: {s['skipped']}.", ""]
    server = "a throwaway server syncing to disk" if s["own_server"] else "the server given"
    lines += [
        f"Against {server}, on this machine. Appends: one store, medians of the runs.",
        "",
        "| appends | events/s |",
        "| --- | ---: |",
        *[f"| {name} | {rate:,} |" for name, rate in s["append_events_per_second"].items()],
        "",
        "Workers draining a queue of real pipelines (a git workspace each, the scripted agent",
        "as a subprocess for every role, one iteration, one review pass), timed from",
        "`ralph worker --concurrency N --exit-when-idle` starting to its exit (worker start-up",
        "included).",
        "",
        "| workers | pipelines | seconds | pipelines/s | events/s |",
        "| ---: | ---: | ---: | ---: | ---: |",
        *[f"| {workers} | {_drain_cells(row)} |" for workers, row in s["workers"].items()],
    ]
    remote = s.get("remote_workers")  # absent from results written before it was measured
    if remote is None:
        return [*lines, ""]
    lines += [
        "",
        "The same drain with remote tickets: `ralph submit --remote` of one bare remote in a",
        "temporary folder, `ralph worker --workdir DIR` (one folder the N workers share). Each",
        "pipeline makes its repository from the workdir's bare cache of the remote (made by",
        "the first, fetched into by each), pushes the claim ref, and pushes its commit with",
        "the lease before the commit's fact is appended. *x path*: the seconds over the path",
        "drain's with as many workers, run just before it; *+ms a pipeline*: the wall time it",
        "adds per pipeline.",
        "",
        "| workers | pipelines | seconds | pipelines/s | events/s | x path | +ms a pipeline |",
        "| ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for workers, row in remote.items():
        path = s["workers"][workers]
        added = (row["seconds"] - path["seconds"]) / row["pipelines"] * 1000
        lines.append(
            f"| {workers} | {_drain_cells(row)} | {row['seconds'] / path['seconds']:.2f} | "
            f"{added:+,.0f} |"
        )
    return [*lines, ""]


def _drain_cells(row: dict[str, Any]) -> str:
    """A drain's pipelines, seconds, pipelines/s and events/s, as table cells."""
    return (
        f"{row['pipelines']} | {row['seconds']} | {row['pipelines_per_second']} | "
        f"{row['events_per_second']:,}"
    )


def _render_peers(peers: dict[str, Any]) -> list[str]:
    """The engine step overhead section: ralph next to LangGraph and Burr."""
    sizes = [str(n) for n in peers["sizes"]]
    lines = [
        "## Engine step overhead, side by side",
        "",
        "The same loop in every engine: N steps that do no real work, a tiny state. Durable",
        "contenders make each step durable in SQLite before the next (ralph: its event store,",
        "WAL, `synchronous=FULL`, a sync per step whose handler acted outside the store;",
        "LangGraph: `SqliteSaver`; Burr: `SQLitePersister`). `durability = process` commits",
        "every step but syncs none (it survives a killed process, not a power cut).",
        f"Contenders alternate, {peers['repeats']} runs each; medians (steps/s).",
        "",
        "| contender | " + " | ".join(f"N = {int(n):,}" for n in sizes) + " |",
        "| --- | " + " | ".join("---:" for _ in sizes) + " |",
    ]
    names = list(peers["steps_per_second"][sizes[-1]])
    for name in names:
        row = [f"{peers['steps_per_second'][n].get(name, 0):,}" for n in sizes]
        lines.append(f"| {name} | " + " | ".join(row) + " |")
    if peers["not_installed"]:
        missing = ", ".join(peers["not_installed"])
        lines += ["", f"Not installed here (`pip install -e '.[bench]'`): {missing}."]
    lines += ["", "| goal | met |", "| --- | --- |"]
    for goal, met in peers["goals"].items():
        verdict = "not measured (peer not installed)" if met is None else ("yes" if met else "no")
        lines.append(f"| {goal} | {verdict} |")
    return [*lines, ""]


SECTIONS = (
    "fold",
    "durable",
    "reader",
    "peers",
    "serialization",
    "scaleout",
    "invocation",
    "cli",
)


def main(argv: list[str] | None = None) -> int:
    """Run the benchmarks and write the results."""
    parser = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__)
    parser.add_argument("--quick", action="store_true", help="a smoke run of about a minute")
    parser.add_argument(
        "--smoke",
        action="store_true",
        help="with --quick: the least that runs every section's code (the test suite's check "
        "that the benchmarks still work; its figures mean nothing)",
    )
    parser.add_argument("--events", type=int, help="events in the fold benchmark")
    parser.add_argument("--output", type=Path, default=HERE, help="where to write the results")
    parser.add_argument("--fold-only", action="store_true", help="only the fold benchmark")
    parser.add_argument(
        "--only",
        choices=SECTIONS,
        action="append",
        help="run only this section (repeatable), keeping the other sections of the "
        "results.json already in --output",
    )
    parser.add_argument("--lines", type=int, help="lines in the events-file reader benchmark")
    parser.add_argument(
        "--store",
        help="a PostgreSQL URL for the scale-out benchmark (default: a throwaway server)",
    )
    args = parser.parse_args(argv)
    if args.events is not None and args.events < 1:
        parser.error("--events must be at least 1")
    if args.lines is not None and args.lines < 10:
        parser.error("--lines must be at least 10")
    chosen = set(args.only or (["fold"] if args.fold_only else SECTIONS))
    events = args.events or (100_000 if args.quick else 1_000_000)
    repeats = 3 if args.quick else 5
    results: dict[str, Any] = {}
    previous = args.output / "results.json"
    if args.only and previous.exists():
        results = json.loads(previous.read_text())
    results["quick"] = args.quick
    results["machine"] = machine()
    results["rerun"] = sorted(chosen) if args.only else None
    if "fold" in chosen:
        print(f"fold benchmark: {events:,} events, {repeats} repeats", flush=True)
        results["fold"] = run_fold_benchmark(events, repeats)
    if "durable" in chosen:
        print("durable loop benchmarks", flush=True)
        results["durable"] = run_durable_benchmarks(args.quick, args.events)
    if "reader" in chosen:
        lines = args.lines or (100_000 if args.quick else 1_000_000)
        print(f"events-file reader: {lines:,} lines", flush=True)
        results["reader"] = run_reader_benchmark(lines, 3 if args.quick else 5)
    if "peers" in chosen:
        sizes = [200] if args.quick else [1_000, 10_000]
        print(f"engine step overhead: ralph, LangGraph, Burr at N = {sizes}", flush=True)
        results["peers"] = run_peer_benchmark(sizes, 3 if args.quick else 5)
    if "serialization" in chosen:
        print("serialization round trips", flush=True)
        results["serialization"] = run_serialization_benchmark(
            min(events, 10_000 if args.quick else 100_000), 3 if args.quick else 5
        )
    if "invocation" in chosen:
        print("invocation: the engine's time per agent invocation", flush=True)
        results["invocation"] = run_invocation_benchmark(args.quick)
    if "cli" in chosen:
        print("cli: ralph emit, task add, respond, status and a bare start", flush=True)
        results["cli"] = run_cli_benchmark(args.quick, args.smoke)
    if "scaleout" in chosen:
        print("scale-out: PostgreSQL appends, and 1, 2 and 4 workers (path, remote)", flush=True)
        results["scaleout"] = run_scaleout_benchmark(args.quick, args.store, args.smoke)
    if "fold" not in results:
        parser.error("no fold results to report: run the fold section too")
    args.output.mkdir(parents=True, exist_ok=True)
    (args.output / "results.json").write_text(json.dumps(results, indent=2) + "\n")
    (args.output / "RESULTS.md").write_text(render(results))
    print((args.output / "RESULTS.md").read_text())
    return 0


if __name__ == "__main__":
    sys.exit(main())
