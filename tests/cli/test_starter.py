"""The starter ralph.toml ``ralph init`` writes, with a workflow preset's loop and hats in
it: it parses, the preset's workflow is the one configured, and the guards stay as without."""

from __future__ import annotations

import pytest

from pipeline.app.cli._init import starter_config
from pipeline.app.workflows import load_preset, preset_names
from pipeline.core.config import parse_config, require_chains


@pytest.mark.parametrize("name", preset_names())
def test_the_starter_with_each_preset_parses_with_its_workflow(name: str) -> None:
    """The preset's [loop] keys and hats are the configuration's, its budget the preset's
    typical run; the guards are the starter's; the file parses with an agent for each role."""
    preset = load_preset(name)
    text = starter_config(["claude", "codex"], ("make", "test"), preset)
    config = parse_config(text, "ralph.toml")
    require_chains(config, "ralph.toml")
    assert config.loop_policy().topology == preset.policy().topology
    for key, value in preset.loop.items():
        got = getattr(config.loop, key)
        assert (list(got) if isinstance(got, tuple) else got) == value, key
    assert config.hats.work == preset.config().hats.work
    if preset.max_iterations is not None:
        assert config.budgets.max_iterations == preset.max_iterations
    assert config.loop.stale_repeats == 3
    assert '# cancellation_promise = "loop.cancel"' in text


def test_the_default_preset_writes_the_plain_starter() -> None:
    """ralph init --preset code-assist is ralph init."""
    plain = starter_config(["claude"], None)
    assert starter_config(["claude"], None, load_preset("code-assist")) == plain
