"""Cost and tokens where people look: commit trailers, ``ralph status`` (text and JSON) and
``ralph runs``, after a real run whose agents report no cost (a command agent has no output
format to read it from), so every figure must say unknown, never $0."""

from __future__ import annotations

import subprocess
from pathlib import Path

import orjson
import pytest

from pipeline.events import CommitCreated, UsageReported
from tests.runtime.workspace import (
    FINISH_EVERYTHING,
    make_workspace,
    ralph,
    run_here,
    scripted,
    stored_events,
)


@pytest.fixture(scope="module")
def finished(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A finished run of the scripted agent."""
    root = make_workspace(
        tmp_path_factory.mktemp("cost") / "ws",
        scripts={
            "s.toml": FINISH_EVERYTHING.replace('"1. do it"', '"1. do it"\nwrite."x.txt" = "x"')
        },
        agents={"main": scripted("s.toml")},
    )
    run_here(root)
    return root


def _trailers(root: Path, sha: str) -> list[str]:
    message = subprocess.run(
        ["git", "log", "-1", "--format=%B", sha],
        cwd=root,
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    parsed = subprocess.run(
        ["git", "interpret-trailers", "--parse"],
        cwd=root,
        input=message,
        check=True,
        capture_output=True,
        text=True,
    )
    return parsed.stdout.splitlines()


def test_every_commit_of_a_run_carries_model_and_cost_trailers(finished: Path) -> None:
    """Each commit the run made has Ralph-Effect, Ralph-Model and Ralph-Cost trailers; with
    no cost reported, the cost and the model say unknown."""
    log = stored_events(finished)
    commits = [e.sha for e in log if isinstance(e, CommitCreated)]
    assert commits
    for sha in commits:
        trailers = _trailers(finished, sha)
        assert [t.split(":")[0] for t in trailers] == ["Ralph-Effect", "Ralph-Model", "Ralph-Cost"]
        assert trailers[1:] == ["Ralph-Model: unknown", "Ralph-Cost: unknown"]


def test_status_shows_cost_and_tokens_and_its_json_holds_the_ledger(finished: Path) -> None:
    """``ralph status``: a cost row naming the invocations of unknown cost and a tokens row;
    ``--json``: the ledger's spend, every invocation counted as of unknown cost."""
    usages = sum(isinstance(e, UsageReported) for e in stored_events(finished))
    assert usages > 0
    text = ralph("status", cwd=finished)
    assert text.returncode == 0, text.stderr
    assert f"unknown ({usages} invocations)" in text.stdout
    assert "tokens" in text.stdout
    assert "$0" not in text.stdout
    as_json = ralph("status", "--json", cwd=finished)
    assert as_json.returncode == 0, as_json.stderr
    total = orjson.loads(as_json.stdout)["ledger"]["spend"]["total"]
    assert total["invocations"] == total["unknown_cost"] == usages
    assert total["cost_usd"] == 0.0  # the known part; unknown_cost says it is not the cost


def test_runs_lists_each_runs_cost(finished: Path) -> None:
    """``ralph runs`` has a cost column; a run of unknown cost shows unknown."""
    listed = ralph("runs", cwd=finished)
    assert listed.returncode == 0, listed.stderr
    header = next(line for line in listed.stdout.splitlines() if "events" in line)
    assert "cost" in header
    (row,) = [line for line in listed.stdout.splitlines() if " unknown " in line]
    assert row
