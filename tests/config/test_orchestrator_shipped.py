"""Every ``ralph.yml`` ralph-orchestrator 2.10.1 ships translates into a ``ralph.toml`` ralph
accepts, with ralph-orchestrator's coordinator as a hat of the topology.

The 34 files are copies, under ``tests/fixtures/orchestrator/v2.10.1`` at their paths in
that repository (see the README there); each has its expected translation beside it as
``.toml`` (``RALPH_UPDATE_SNAPSHOTS=1`` re-records them). Ten of them were refused before
the coordinator was modelled (:data:`ONCE_REFUSED`).
"""

from __future__ import annotations

import os
import tomllib
from pathlib import Path

import pytest
import yaml

from pipeline.core.config import (
    Severity,
    parse_config,
    topology_problems,
    translate_orchestrator_config,
)

SHIPPED = Path(__file__).parents[1] / "fixtures" / "orchestrator" / "v2.10.1"
CASES = sorted(SHIPPED.rglob("*.yml"))
SCENARIOS = "crates/ralph-core/tests/scenarios"

ONCE_REFUSED = (
    "presets/minimal/builder.yml",
    "presets/minimal/code-assist.yml",
    "presets/minimal/kiro.yml",
    "presets/minimal/preset-evaluator.yml",
    "presets/minimal/roo.yml",
    "presets/wave-review.yml",
    "ralph.bot.yml",
    "ralph.e2e.yml",
    "ralph.m.yml",
    "ralph.reviewer.yml",
)
"""The files ralph refused before it modelled the coordinator: no hat reachable from the
start published the completion promise, the start woke no hat, or a default_publishes was
the completion promise."""


def _name(path: Path) -> str:
    return path.relative_to(SHIPPED).as_posix()


def test_the_fixtures_are_the_34_files_ralph_orchestrator_ships() -> None:
    """The presets, the minimal presets, the repository's own files, the documented example
    and the five core scenarios: 34 files."""
    names = [_name(path) for path in CASES]
    assert len(names) == 34
    assert sum(n.startswith("presets/minimal/") for n in names) == 12
    assert sum(n.startswith("presets/") and n.count("/") == 1 for n in names) == 8
    assert sum("/" not in n for n in names) == 8
    assert "docs/examples/presets/auto-pdd.yml" in names
    assert sum(n.startswith(SCENARIOS) for n in names) == 5
    assert set(ONCE_REFUSED) <= set(names)


@pytest.mark.parametrize("path", CASES, ids=_name)
def test_each_shipped_file_translates_to_its_golden_file(path: Path) -> None:
    """The translation is exactly the checked-in ``.toml`` beside the file."""
    text = translate_orchestrator_config(path.read_text(encoding="utf-8"), _name(path)).toml_text
    golden = path.with_suffix(".toml")
    if os.environ.get("RALPH_UPDATE_SNAPSHOTS") == "1":
        golden.write_text(text, encoding="utf-8", newline="")
    assert text == golden.read_text(encoding="utf-8")


@pytest.mark.parametrize("path", CASES, ids=_name)
def test_each_shipped_file_is_a_topology_with_the_coordinator_and_no_error(path: Path) -> None:
    """ralph's parser accepts the translation (so no topology error); the topology's
    coordinator is a hat that triggers on ``*`` (below every other trigger: it takes the
    topics no other hat triggers on), may publish the completion promise and every topic
    the other hats trigger on, and falls back on ``task.resume``; the other hats are the
    file's, in its order."""
    translation = translate_orchestrator_config(path.read_text(encoding="utf-8"), _name(path))
    policy = parse_config(translation.toml_text, "ralph.toml").loop_policy()
    assert all(p.severity is Severity.WARNING for p in topology_problems(policy))
    topology = policy.topology
    assert topology is not None
    assert topology.coordinator is not None
    coordinator = topology.hat(topology.coordinator)
    assert coordinator is not None
    assert coordinator.triggers == ("*",)
    assert coordinator.default_publishes == "task.resume"
    assert policy.completion_promise in coordinator.publishes
    others = [hat for hat in topology.hats if hat is not coordinator]
    for hat in others:
        assert set(hat.triggers) <= set(coordinator.publishes)
    source = yaml.safe_load(path.read_text(encoding="utf-8"))
    given = (source.get("config", source) if SCENARIOS in str(path) else source).get("hats")
    left_out = {line.split(":")[0] for line in translation.untranslated if ": left out:" in line}
    kept = [name for name in given or {} if f"hats.{name}" not in left_out]
    assert [hat.name for hat in others] == kept


@pytest.mark.parametrize("name", ONCE_REFUSED)
def test_the_once_refused_files_are_completed_by_the_coordinator(name: str) -> None:
    """Each of the ten is reachable to completion now: some route from the start reaches the
    coordinator, which may publish the completion promise, and no hat's default_publishes is
    the completion promise any more (it became task.resume, named as not translated)."""
    path = SHIPPED / name
    translation = translate_orchestrator_config(path.read_text(encoding="utf-8"), name)
    document = tomllib.loads(translation.toml_text)
    promise = document["loop"]["completion_promise"]
    assert all(hat.get("default_publishes") != promise for hat in document["hats"].values())
    if name in ("presets/wave-review.yml", "ralph.reviewer.yml"):
        assert any(
            ".default_publishes: the completion promise" in u for u in translation.untranslated
        )
        assert document["hats"]["synthesizer"]["default_publishes"] == "task.resume"
    parse_config(translation.toml_text, "ralph.toml")  # refused before, with exit 2


def test_a_scenario_translates_its_config_and_names_the_rest() -> None:
    """A core scenario's ``config`` is the configuration (its key paths named from the
    file's top); its name, description, outputs and expectations are listed as not
    translated; ``subscribes_to`` is read as the hat's triggers, with a note."""
    path = SHIPPED / SCENARIOS / "default_publishes.yml"
    translation = translate_orchestrator_config(path.read_text(encoding="utf-8"), path.name)
    assert [line.split(":")[0] for line in translation.untranslated] == [
        "name",
        "description",
        "mock_responses",
        "expected",
    ]
    assert translation.notes == (
        "config.hats.builder.subscribes_to: read as its triggers (ralph-orchestrator's "
        "prompts and test scenarios name a hat's triggers so; its configuration reads "
        "triggers only)",
    )
    document = tomllib.loads(translation.toml_text)
    assert document["budgets"]["max_iterations"] == 3
    assert document["hats"]["builder"]["triggers"] == ["build.task"]
    assert document["hats"]["builder"]["default_publishes"] == "build.done"


def test_without_hats_the_coordinator_works_alone() -> None:
    """A file with no hats (ralph-orchestrator's solo mode) is a topology of the coordinator
    alone, woken by the start and by its own task.resume; the header says how to have
    ralph's own pipeline instead."""
    path = SHIPPED / "presets" / "hatless-baseline.yml"
    translation = translate_orchestrator_config(path.read_text(encoding="utf-8"), path.name)
    document = tomllib.loads(translation.toml_text)
    assert list(document["hats"]) == ["coordinator"]
    assert document["loop"]["starting_event"] == "task.start"
    assert "You are the loop's only hat" in document["hats"]["coordinator"]["instructions"]
    assert "delete [hats.coordinator]" in translation.toml_text
