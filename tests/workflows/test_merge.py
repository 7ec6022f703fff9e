"""A preset's workflow over a workspace's ralph.toml: the preset replaces the workflow (the
hats, the loop's workflow keys) and nothing else; the committer's and fixer's hats, the
loop's guards, agents, chains, budgets and the rest stay the workspace's."""

from __future__ import annotations

import json
import tomllib

import pytest

from pipeline.app.workflows import (
    KEPT_HATS,
    WORKFLOW_LOOP_KEYS,
    apply_preset,
    load_preset,
    parse_preset,
)
from pipeline.core.config import ConfigError, parse_config

WORKSPACE = """
prompt_file = "TASK.md"
validate = ["make", "test"]

[budgets]
max_iterations = 9

[agents.main]
command = ["agent"]

[agents.other]
command = ["other"]

[chains]
default = ["main"]

[store]
url = "events.db"

[hats.developer]
instructions = "Use tabs."
chain = ["other"]

[hats.reviewer]
instructions = "Be strict."

[hats.committer]
instructions = "One line."

[loop]
required_events = ["review.passed"]
completion_promise = "DONE"
cancellation_promise = "loop.cancel"
stale_repeats = 7
human_timeout_s = 0
"""

TOPOLOGY = """
[agents.main]
command = ["agent"]

[chains]
default = ["main"]

[loop]
starting_event = "go"
coordinator = "boss"
commits = false

[hats.boss]
triggers = ["go"]
publishes = ["LOOP_COMPLETE"]

[hats.fixer]
triggers = ["fix.me"]
"""


def test_the_workspace_keeps_everything_but_its_workflow() -> None:
    """tdd over a configured workspace: the same agents, chains, budgets, store, prompt file
    and validate; the committer's hat and the loop's guards stay; the role hats, required
    events and completion promise are the preset's; the developer's chain moved to
    [chains], so the developer's agents are the same."""
    text = apply_preset(WORKSPACE, load_preset("tdd"), "ralph.toml")
    config = parse_config(text, "merged")
    before = parse_config(WORKSPACE, "ralph.toml")
    assert config.agents == before.agents
    assert config.budgets == before.budgets
    assert config.store == before.store
    assert (config.prompt_file, config.validate) == (before.prompt_file, before.validate)
    assert config.hats.committer == before.hats.committer
    assert config.chains.developer == ("other",)
    assert config.hats.developer.instructions == ""
    assert config.hats.reviewer.instructions == ""
    assert list(config.hats.work) == ["test-writer", "implementer", "refactorer"]
    assert config.loop.stale_repeats == 7
    assert config.loop.human_timeout_s == 0
    assert config.loop.cancellation_promise == "loop.cancel"
    assert config.loop.completion_promise == "LOOP_COMPLETE"
    assert config.loop.required_events == ("test.red", "test.green")
    assert config.loop.starting_event == "tdd.start"
    assert config.loop.enforce_hat_scope  # the preset's


def test_the_default_preset_drops_a_topology_of_the_workspace() -> None:
    """code-assist over a topology: no hats with triggers, no starting event, coordinator or
    commits setting left; the built-in pipeline with the workspace's agents."""
    text = apply_preset(TOPOLOGY, load_preset("code-assist"), "ralph.toml")
    config = parse_config(text, "merged")
    assert not config.hats.topology
    assert config.loop.starting_event == "task.start"
    assert config.loop.coordinator == ""
    assert config.loop.commits
    assert config.loop_policy().topology is None
    assert config.chains.default == ("main",)


def test_a_workspace_fixer_with_triggers_is_a_topology_hat_and_goes() -> None:
    """Only the committer's and fixer's role hats (no triggers) are kept."""
    assert KEPT_HATS == ("committer", "fixer")
    text = apply_preset(TOPOLOGY, load_preset("debug"), "ralph.toml")
    hats = tomllib.loads(text)["hats"]
    assert "fixer" not in hats
    assert "boss" not in hats
    assert list(hats) == ["reproducer", "investigator", "bug-fixer", "verifier"]


@pytest.mark.parametrize("key", WORKFLOW_LOOP_KEYS)
def test_each_workflow_key_of_the_workspace_goes(key: str) -> None:
    """A workflow key the preset does not set is dropped, never kept from the workspace."""
    text = apply_preset(TOPOLOGY + WORKSPACE.split("[loop]")[1], load_preset("code-assist"), "x")
    assert key not in tomllib.loads(text).get("loop", {})


def test_a_preset_hat_replaces_a_kept_one_of_its_name() -> None:
    """A preset's own committer table wins over the workspace's."""
    preset = parse_preset(
        "mine",
        '[preset]\ndescription = "x"\n[hats.committer]\ninstructions = "Mine."\n',
        "mine.toml",
    )
    text = apply_preset(WORKSPACE, preset, "ralph.toml")
    assert parse_config(text, "m").hats.committer.instructions == "Mine."


def test_multi_line_text_survives_the_merge_byte_for_byte() -> None:
    """Instructions with line breaks, quotes, a backslash and a CRLF read back as they were,
    the workspace's and the preset's."""
    tricky = 'a "quoted"\nline\r\nand \\ a backslash\n"""'
    workspace = WORKSPACE.replace('"One line."', json.dumps(tricky))
    assert parse_config(workspace, "ralph.toml").hats.committer.instructions == tricky
    text = apply_preset(workspace, load_preset("tdd"), "ralph.toml")
    config = parse_config(text, "merged")
    assert config.hats.committer.instructions == tricky
    tdd = load_preset("tdd").hats["test-writer"]["instructions"]
    assert config.hats.work["test-writer"].instructions == tdd


def test_a_workspace_that_is_not_toml_is_a_config_error_naming_it() -> None:
    """One line naming the file; the preset is not to blame."""
    with pytest.raises(ConfigError, match=r"^/w/ralph.toml: not valid TOML"):
        apply_preset("[agents\n", load_preset("tdd"), "/w/ralph.toml")


def test_the_merged_text_names_its_source_and_preset_on_comment_lines() -> None:
    """A line break in the source's name cannot end the comment early."""
    text = apply_preset(WORKSPACE, load_preset("tdd"), "odd\nname")
    assert text.startswith("# odd name with the workflow of the preset tdd: ")
    parse_config(text, "m")
