"""The benchmark code cannot rot: a tiny run completes and writes its results."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # whole runs in subprocesses: seconds a test

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_a_small_benchmark_run_writes_results(tmp_path: Path, postgres_url: str) -> None:
    """``python -m benchmarks --quick --smoke --events N`` writes RESULTS.md and results.json (the
    scale-out part on the suite's PostgreSQL server: it starts no server of its own)."""
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "benchmarks",
            "--quick",
            "--smoke",
            "--events",
            "3000",
            "--lines",
            "2000",
            "--output",
            str(tmp_path),
            "--store",
            postgres_url,
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    data = json.loads((tmp_path / "results.json").read_text())
    assert data["fold"]["events"] == 3000
    assert data["fold"]["anomalies_in_fold"] == 0
    ours = data["peers"]["steps_per_second"]["200"]
    assert ours["ralph durable (SQLite, every step committed)"] > 0
    assert ours["ralph in memory"] > 0
    assert "Engine step overhead, side by side" in (tmp_path / "RESULTS.md").read_text()
    assert data["serialization"]["round_trips_per_second"]["events, cattrs + orjson"] > 0
    assert all(rate > 0 for rate in data["fold"]["events_per_second"].values())
    assert "| ralph reduce" in (tmp_path / "RESULTS.md").read_text()
    durable = data["durable"]
    assert durable["steps"]["ralph durable steps/s"] > 0
    assert [row["events"] for row in durable["replay"]] == [300, 3000]
    assert "## Durable loop" in (tmp_path / "RESULTS.md").read_text()
    reader = data["reader"]
    assert reader["lines"] == 2000
    assert all(rate > 0 for rate in reader["lines_per_second"].values())
    assert reader["peak_bytes"]["whole file"] > 0
    assert "## Events-file reader" in (tmp_path / "RESULTS.md").read_text()
    scaleout = data["scaleout"]
    for drains in (scaleout["workers"], scaleout["remote_workers"]):
        assert set(drains) == {"1", "2", "4"}
        assert all(row["pipelines_per_second"] > 0 for row in drains.values())
    assert all(rate > 0 for rate in scaleout["append_events_per_second"].values())
    assert "## Scale-out on PostgreSQL" in (tmp_path / "RESULTS.md").read_text()
    assert "| x path |" in (tmp_path / "RESULTS.md").read_text()
    invocation = data["invocation"]
    assert invocation["invocations_per_run"] >= 4
    assert invocation["engine_ms_per_invocation"] > 0
    assert invocation["bare_spawn_ms"] > 0
    assert "## The engine's time per agent invocation" in (tmp_path / "RESULTS.md").read_text()


def _benchmarks(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "benchmarks", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def test_only_reruns_one_section_and_keeps_the_others(tmp_path: Path) -> None:
    """``--only serialization`` over an earlier results.json adds that section and keeps the
    fold measured before; RESULTS.md says which sections were rerun."""
    first = _benchmarks("--quick", "--only", "fold", "--events", "500", "--output", str(tmp_path))
    assert first.returncode == 0, first.stderr
    fold = json.loads((tmp_path / "results.json").read_text())["fold"]
    second = _benchmarks(
        "--quick", "--only", "serialization", "--events", "500", "--output", str(tmp_path)
    )
    assert second.returncode == 0, second.stderr
    data = json.loads((tmp_path / "results.json").read_text())
    assert data["fold"] == fold
    assert data["serialization"]["round_trips_per_second"]["events, cattrs + orjson"] > 0
    assert "durable" not in data
    report = (tmp_path / "RESULTS.md").read_text()
    assert "Sections rerun then with `--only`: serialization" in report
    assert "## Serialization" in report


def test_bad_arguments_are_refused(tmp_path: Path) -> None:
    """A nonsensical event count is a usage error, exit 2."""
    result = subprocess.run(
        [sys.executable, "-m", "benchmarks", "--events", "0", "--output", str(tmp_path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 2
    assert "--events must be at least 1" in result.stderr
