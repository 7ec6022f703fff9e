"""``--otel-file`` and ``--otel``: the run's spans from the command line."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import orjson

from pipeline.events import WIRE_TAGS
from pipeline.handlers.runtime import WorkspaceLayout
from pipeline.handlers.store import SqliteEventStore
from tests.cli.test_cli import ralph


def test_demo_with_otel_file_writes_one_span_per_effect_under_one_root(tmp_path: Path) -> None:
    """Every line is a JSON span; one ``ralph demo`` root parents every effect span, all in
    one trace, and the effect spans' facts, in order, are the stored event log."""
    spans_file = tmp_path / "spans.jsonl"
    result = ralph("demo", "run", "--plain", "--otel-file", str(spans_file), cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    spans = [orjson.loads(line) for line in spans_file.read_text().splitlines()]
    (root,) = [span for span in spans if span["name"] == "ralph demo"]
    effects = sorted(
        (span for span in spans if span is not root), key=lambda span: span["start_time"]
    )
    assert len(effects) == len(spans) - 1 > 20
    assert {span["parent_id"] for span in effects} == {root["context"]["span_id"]}
    assert {span["context"]["trace_id"] for span in spans} == {root["context"]["trace_id"]}
    facts = [tag for span in effects for tag in span["attributes"]["ralph.facts"]]
    with SqliteEventStore(WorkspaceLayout(root=tmp_path / "run").store) as store:
        (run,) = store.runs()
        stored = [WIRE_TAGS[type(event)] for event in store.read(run.run_id)]
    assert facts == stored
    assert {span["attributes"].get("ralph.run_id") for span in effects[1:]} == {run.run_id}


def test_otel_without_the_extra_installed_is_a_clear_usage_error(tmp_path: Path) -> None:
    """With OpenTelemetry not importable, ``--otel`` exits 2 naming the extra to install, and
    no run is started."""
    blocked = (
        "import sys; sys.modules['opentelemetry'] = None; "
        "from pipeline.app.cli import main; sys.argv = ['ralph', *sys.argv[1:]]; main()"
    )
    result = subprocess.run(
        [sys.executable, "-c", blocked, "demo", "run", "--otel"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 2
    assert "pip install 'ralph-pipeline[otel]'" in result.stderr
    assert not WorkspaceLayout(root=tmp_path / "run").store.exists()


def test_otel_file_in_a_missing_directory_is_a_clear_usage_error(tmp_path: Path) -> None:
    """A spans file that cannot be written stops the command before the run starts."""
    result = ralph("demo", "run", "--otel-file", str(tmp_path / "no" / "spans.jsonl"), cwd=tmp_path)
    assert result.returncode == 2
    assert "cannot write spans to" in result.stderr
