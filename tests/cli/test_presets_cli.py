"""``ralph presets``, ``ralph presets show``, ``ralph init --preset`` and ``ralph init --from``
as real subprocesses: every preset listed and drawn, starters that parse, an existing
ralph.toml never overwritten, and bad input one line with exit 2 before anything is written."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from pipeline.app.workflows import load_preset, preset_names
from pipeline.core.config import parse_config
from tests.runtime.workspace import RALPH, ROOT, ralph

pytestmark = pytest.mark.slow  # subprocesses: a second or so each

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "orchestrator"


def one_line_error(result: subprocess.CompletedProcess[str]) -> None:
    """Exit 2 and one line on stderr, no traceback."""
    assert result.returncode == 2, result.stdout + result.stderr
    assert result.stderr.startswith("error: "), result.stderr
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr
    assert "Traceback" not in result.stderr


def test_presets_lists_every_shipped_preset_with_its_description(tmp_path: Path) -> None:
    """Each name and the start of its description; the default is marked."""
    listed = ralph("presets", cwd=tmp_path)
    assert listed.returncode == 0, listed.stderr
    flat = " ".join(listed.stdout.split())
    for name in preset_names():
        assert name in listed.stdout
        assert " ".join(load_preset(name).description.split()[:2]) in flat
    assert "code-assist (default)" in listed.stdout


@pytest.mark.parametrize("name", preset_names())
def test_show_prints_the_toml_the_drawing_and_the_checks(name: str, tmp_path: Path) -> None:
    """The file as shipped, a Mermaid flowchart with every hat (or the note that the built-in
    pipeline has none), and no problems; --format picks one part."""
    shown = ralph("presets", "show", name, cwd=tmp_path)
    assert shown.returncode == 0, shown.stderr
    preset = load_preset(name)
    assert preset.text.rstrip() in shown.stdout
    if preset.topology:
        assert "flowchart LR" in shown.stdout
        assert all(f'["{hat}"]' in shown.stdout for hat in preset.hats)
    else:
        assert "built-in pipeline" in shown.stdout
    assert "Checks: no problems found." in shown.stdout
    narrow = {**os.environ, "COLUMNS": "40", "PYTHONPATH": str(ROOT)}
    toml = subprocess.run(
        [*RALPH, "presets", "show", name, "--format", "toml"],
        cwd=tmp_path,
        env=narrow,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert toml.stdout == preset.text  # byte for byte, never wrapped to the terminal
    drawing = ralph("presets", "show", name, "--format", "mermaid", cwd=tmp_path)
    assert ("flowchart LR" in drawing.stdout) is preset.topology
    assert "Checks" not in drawing.stdout


def test_show_of_an_unknown_preset_names_the_known_ones(tmp_path: Path) -> None:
    """Exit 2, one line listing the presets there are."""
    result = ralph("presets", "show", "nope", cwd=tmp_path)
    one_line_error(result)
    assert "unknown preset 'nope' (known: code-assist, debug," in result.stderr


@pytest.mark.parametrize("name", ["tdd", "review-only"])
def test_init_with_a_preset_writes_a_starter_with_its_workflow(name: str, tmp_path: Path) -> None:
    """The file parses with the preset's topology; a second init leaves it alone (exit 2)."""
    result = ralph("init", "--preset", name, "-C", str(tmp_path), cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert f"Workflow: {name}" in result.stdout
    text = (tmp_path / "ralph.toml").read_text()
    config = parse_config(text, "ralph.toml")
    assert config.loop_policy().topology == load_preset(name).policy().topology
    again = ralph("init", "--preset", "debug", "-C", str(tmp_path), cwd=tmp_path)
    one_line_error(again)
    assert "exists already" in again.stderr
    assert (tmp_path / "ralph.toml").read_text() == text


def test_init_with_an_unknown_preset_writes_nothing(tmp_path: Path) -> None:
    """Exit 2, one line naming the known presets; no ralph.toml."""
    result = ralph("init", "--preset", "tddd", "-C", str(tmp_path), cwd=tmp_path)
    one_line_error(result)
    assert "known: code-assist" in result.stderr
    assert not (tmp_path / "ralph.toml").exists()


def test_init_from_a_ralph_yml_writes_its_translation(tmp_path: Path) -> None:
    """The translation is written as it is (it parses), the coordinator and every setting
    not translated are printed, and the topology has no warning (the topic no hat triggers on
    goes to the coordinator, by design); a second --from refuses to overwrite."""
    source = FIXTURES / "debug.yml"
    result = ralph("init", "--from", str(source), "-C", str(tmp_path), cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    text = (tmp_path / "ralph.toml").read_text()
    golden = (FIXTURES / "debug.toml").read_text()
    assert text.split("\n", 1)[1] == golden.split("\n", 1)[1]  # the first line names the path
    assert "Not translated (4):" in result.stdout
    for name in ("investigator", "tester", "fixer", "verifier"):
        assert f"hats.{name}.name: the display name" in result.stdout
    assert "coordinator is the hat 'coordinator'" in result.stdout
    assert "warning" not in result.stderr
    parse_config(text, "ralph.toml")
    again = ralph("init", "--from", str(source), "-C", str(tmp_path), cwd=tmp_path)
    one_line_error(again)
    assert "exists already" in again.stderr
    assert (tmp_path / "ralph.toml").read_text() == text


def test_init_from_a_workflow_that_cannot_complete_writes_nothing(tmp_path: Path) -> None:
    """A translation whose topology has an error is a configuration error: exit 2, one line
    naming it, no file. Two hats hand work to each other for ever, their scopes enforced:
    no topic ever reaches the coordinator, and neither hat publishes the completion promise."""
    source = tmp_path / "ralph.yml"
    source.write_text(
        "hats:\n  builder:\n    name: B\n    description: Builds.\n"
        "    triggers: [build.start, build.checked]\n    publishes: [build.done]\n"
        "  checker:\n    triggers: [build.done]\n    publishes: [build.checked]\n"
        "event_loop:\n  starting_event: build.start\n  enforce_hat_scope: true\n"
    )
    result = ralph("init", "--from", str(source), "-C", str(tmp_path), cwd=tmp_path)
    one_line_error(result)
    assert "the topology: no hat reachable from the starting event" in result.stderr
    assert not (tmp_path / "ralph.toml").exists()


@pytest.mark.parametrize(
    ("content", "said"),
    [
        (None, "not found"),
        ("hats: [\n", "not valid YAML"),
        ("hats:\n  a:\n    triggers: 3\n", "hats.a.triggers"),
    ],
)
def test_init_from_bad_input_writes_nothing(content: str | None, said: str, tmp_path: Path) -> None:
    """A missing file, bad YAML, a setting of the wrong type: exit 2, one line, no file."""
    source = tmp_path / "ralph.yml"
    if content is not None:
        source.write_text(content)
    result = ralph("init", "--from", str(source), "-C", str(tmp_path), cwd=tmp_path)
    one_line_error(result)
    assert said in result.stderr
    assert not (tmp_path / "ralph.toml").exists()


def test_init_takes_a_preset_or_a_translation_not_both(tmp_path: Path) -> None:
    """Exit 2, one line, nothing written."""
    source = FIXTURES / "debug.yml"
    result = ralph(
        "init", "--preset", "tdd", "--from", str(source), "-C", str(tmp_path), cwd=tmp_path
    )
    one_line_error(result)
    assert "not both" in result.stderr
    assert not (tmp_path / "ralph.toml").exists()
