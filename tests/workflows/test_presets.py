"""The shipped workflow presets: each is a preset whose workflow parses, checks clean (no
topology error, no warning), merges over workspace configurations of every kind, and says
what each hat must do; a preset file that is not one is refused with a one-line reason."""

from __future__ import annotations

from pathlib import Path

import pytest

import pipeline.app.workflows
from pipeline.app.workflows import (
    DEFAULT_PRESET,
    Preset,
    PresetError,
    apply_preset,
    load_preset,
    parse_preset,
    preset_names,
    shipped_presets,
)
from pipeline.core.config import RalphConfig, parse_config, require_chains, topology_problems

PRESETS_DIR = Path(pipeline.app.workflows.__file__).with_name("presets")
EXPECTED = {"code-assist", "tdd", "debug", "spec", "review-only", "research"}
TOPOLOGIES = sorted(EXPECTED - {"code-assist"})

PLAIN = """
[agents.main]
command = ["agent"]

[chains]
default = ["main"]
"""
"""A workspace's ralph.toml with nothing but an agent."""

OWN_TOPOLOGY = (
    PLAIN
    + """
[loop]
starting_event = "build.start"
required_events = ["review.passed"]
coordinator = "builder"
commits = false
stale_repeats = 7

[hats.builder]
triggers = ["build.start"]
publishes = ["LOOP_COMPLETE"]

[hats.committer]
instructions = "One line."
"""
)
"""A workspace with a topology of its own, a guard and the committer's hat."""

ROLE_HATS = """
[agents.main]
command = ["agent"]

[agents.other]
command = ["other"]

[chains]
default = ["main"]

[hats.developer]
instructions = "Use tabs."
chain = ["other"]

[hats.fixer]
chain = ["other"]

[loop]
required_events = ["review.passed"]
cancellation_promise = "loop.cancel"
"""
"""A workspace that configures the built-in pipeline's hats, one with its own chain."""


def merged(workspace: str, name: str) -> RalphConfig:
    """The workspace's configuration with the preset's workflow, parsed and complete."""
    config = parse_config(apply_preset(workspace, load_preset(name), "ralph.toml"), "merged")
    require_chains(config, "merged")
    return config


def test_the_shipped_presets_are_the_six_workflows() -> None:
    """code-assist (the default), tdd, debug, spec, review-only and research, one file each."""
    assert set(preset_names()) == EXPECTED
    assert {p.stem for p in PRESETS_DIR.glob("*.toml")} == EXPECTED
    assert DEFAULT_PRESET == "code-assist"
    assert [p.name for p in shipped_presets()] == sorted(EXPECTED)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_every_preset_parses_and_checks_clean(name: str) -> None:
    """Its workflow is a ralph.toml that parses, and the topology checks find nothing: no
    error, and no warning either."""
    preset = load_preset(name)
    assert preset.description
    assert "\n" not in preset.description
    assert topology_problems(preset.policy()) == ()


@pytest.mark.parametrize("name", TOPOLOGIES)
def test_every_topology_preset_is_scoped_and_gated(name: str) -> None:
    """Each hat limits what it publishes (with scope enforced), says what it must not do and
    which topics to publish; completion needs at least one required event."""
    preset = load_preset(name)
    assert preset.topology
    policy = preset.policy()
    assert policy.enforce_hat_scope
    assert policy.required_events
    for hat_name, hat in preset.hats.items():
        assert hat["publishes"], hat_name
        assert "Do not" in hat["instructions"], hat_name
        for topic in hat["publishes"]:
            assert f"`{topic}`" in hat["instructions"], (hat_name, topic)


@pytest.mark.parametrize("name", sorted(EXPECTED))
@pytest.mark.parametrize(
    "workspace", [PLAIN, OWN_TOPOLOGY, ROLE_HATS], ids=["plain", "own", "roles"]
)
def test_every_preset_merges_over_every_kind_of_workspace(name: str, workspace: str) -> None:
    """The merged configuration parses and has an agent for every role it needs; its
    topology is the preset's exactly (none for code-assist)."""
    config = merged(workspace, name)
    preset = load_preset(name)
    assert config.loop_policy().topology == preset.policy().topology
    assert set(config.hats.work) == {n for n, h in preset.hats.items() if "triggers" in h}


def test_the_tdd_test_writer_may_not_touch_source_files() -> None:
    """The test writer's instructions forbid source files and it publishes only test.red or
    tdd.covered; completion needs a red and a green test."""
    tdd = load_preset("tdd")
    writer = tdd.hats["test-writer"]
    assert "Do not touch source files." in writer["instructions"]
    assert writer["publishes"] == ["test.red", "tdd.covered"]
    assert tdd.loop["required_events"] == ["test.red", "test.green"]


def test_debug_completes_only_after_a_verified_fix() -> None:
    """Every step of the debug loop is a required event, the verified fix included."""
    required = load_preset("debug").policy().required_events
    assert set(required) == {
        "bug.reproduced",
        "hypothesis.confirmed",
        "fix.applied",
        "fix.verified",
    }


@pytest.mark.parametrize(("name", "commits"), [("review-only", False), ("research", False)])
def test_the_read_only_presets_commit_nothing(name: str, commits: bool) -> None:
    """review-only and research set commits = false; the others commit."""
    topology = load_preset(name).policy().topology
    assert topology is not None
    assert topology.commits is commits
    for other in ("tdd", "debug", "spec"):
        other_topology = load_preset(other).policy().topology
        assert other_topology is not None
        assert other_topology.commits


def test_code_assist_over_a_plain_workspace_changes_nothing() -> None:
    """The default preset is the built-in pipeline: a workspace without hats of its own
    parses to the same configuration with it."""
    assert merged(PLAIN, "code-assist") == parse_config(PLAIN, "ralph.toml")


def test_an_unknown_preset_is_refused_naming_the_known_ones() -> None:
    """One line, with every shipped name; a name is never used as a path."""
    for name in ("nope", "../tdd", "tdd.toml", ""):
        with pytest.raises(PresetError) as raised:
            load_preset(name)
        message = str(raised.value)
        assert "\n" not in message
        assert all(known in message for known in EXPECTED)


GOOD = (
    '[preset]\ndescription = "A loop."\n'
    '[hats.a]\ntriggers = ["task.start"]\npublishes = ["LOOP_COMPLETE"]\n'
)


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("not toml [", "not valid TOML"),
        ("[hats.a]\ntriggers = ['task.start']\n", "[preset] must be a table"),
        ('[preset]\ndescription = ""\n', "preset.description"),
        ('[preset]\ndescription = "two\\nlines"\n', "preset.description"),
        ('[preset]\ndescription = "x"\ncolour = "red"\n', "preset.colour: unknown key"),
        ('[preset]\ndescription = "x"\nmax_iterations = 0\n', "preset.max_iterations"),
        (GOOD + "[agents.a]\ncommand = ['x']\n", "agents: a preset holds"),
        (GOOD + "[budgets]\nmax_iterations = 3\n", "budgets: a preset holds"),
        (GOOD + "[loop]\nstale = 3\n", "loop.stale: unknown key"),
        (GOOD.replace("[hats.a]", "[hats.a]\nchain = ['claude']"), "names agent 'claude'"),
        ('loop = 3\n[preset]\ndescription = "x"\n', "must be tables"),
    ],
)
def test_a_file_that_is_no_preset_is_refused_with_one_line(text: str, said: str) -> None:
    """Whatever is wrong, one line naming the file and the key; nothing else is a preset."""
    with pytest.raises(PresetError) as raised:
        parse_preset("mine", text, "mine.toml")
    message = str(raised.value)
    assert said in message, message
    assert message.startswith("mine.toml")
    assert "\n" not in message


def test_a_good_preset_file_reads_back_its_parts() -> None:
    """Name, description, the text as given and the hats in file order."""
    preset = parse_preset("mine", GOOD, "mine.toml")
    hats = {"a": {"triggers": ["task.start"], "publishes": ["LOOP_COMPLETE"]}}
    assert preset == Preset(name="mine", description="A loop.", text=GOOD, loop={}, hats=hats)
    assert preset.topology
    assert preset.workflow() == {"hats": hats}
