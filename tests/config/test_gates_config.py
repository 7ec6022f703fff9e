"""`[[gates]]`, `[tamper]` and `[postconditions]` as ralph.toml gives them: what a run records,
and a one-line error naming the key for everything wrong."""

from __future__ import annotations

import pytest

from pipeline import PipelineError
from pipeline.core.config import parse_config
from pipeline.events import GateAction, GateBoundary, GatePin, ScreenKind

GATE = '[[gates]]\nname = "tests"\nargv = ["pytest", "-q"]\n'
HATS = """
[hats.builder]
triggers = ["task.start"]
publishes = ["review.ready"]
[hats.critic]
triggers = ["review.ready"]
publishes = ["LOOP_COMPLETE"]
"""


def refused(text: str) -> str:
    with pytest.raises(PipelineError) as caught:
        parse_config(text, "ralph.toml")
    return str(caught.value)


def test_a_gate_turns_the_screen_and_the_postconditions_on_by_default() -> None:
    loop = parse_config(GATE, "ralph.toml").loop_policy()
    (gate,) = loop.gates
    assert gate.argv == ("pytest", "-q")
    assert gate.on == (GateBoundary.FINAL,)
    assert loop.tamper is not None
    assert loop.postconditions is not None
    assert loop.postconditions.todo_markers == ("TODO", "FIXME")
    assert not loop.postconditions.clean_tree


def test_without_gates_nothing_screens_unless_asked() -> None:
    assert not parse_config("", "ralph.toml").loop_policy().screens
    asked = parse_config("[tamper]\nenabled = true\n", "ralph.toml").loop_policy()
    assert asked.tamper is not None
    assert asked.postconditions is None


def test_the_screen_can_be_turned_off_and_tuned() -> None:
    text = (
        GATE
        + '[tamper]\nactions = { test_removed = "warn" }\non_hit = "stop"\n'
        + "[postconditions]\nenabled = false\n"
    )
    loop = parse_config(text, "ralph.toml").loop_policy()
    assert loop.tamper is not None
    assert loop.tamper.action_for(ScreenKind.TEST_REMOVED) is GateAction.WARN
    assert loop.tamper.action_for(ScreenKind.SKIP_ADDED) is GateAction.STOP
    assert loop.postconditions is None
    off = parse_config(GATE + "[tamper]\nenabled = false\n", "ralph.toml").loop_policy()
    assert off.tamper is None


def test_gates_are_pinned_to_the_base_unless_the_person_says_off() -> None:
    """A new run records ``pin = base`` by default, ``off`` when asked, even with the screen
    itself off."""
    assert parse_config(GATE, "ralph.toml").loop_policy().pin is GatePin.BASE
    text = GATE + '[tamper]\nenabled = false\npin = "off"\n'
    assert parse_config(text, "ralph.toml").loop_policy().pin is GatePin.OFF


def test_no_todo_false_leaves_the_markers_out() -> None:
    text = GATE + "[postconditions]\nno_todo = false\n"
    post = parse_config(text, "ralph.toml").loop_policy().postconditions
    assert post is not None
    assert post.todo_markers == ()


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('[[gates]]\nname = "t"\nargv = "pytest -q"\n', "gates.0.argv: expected an array"),
        (GATE + GATE, "gates.1.name: 'tests' is given twice"),
        (GATE + 'on = ["nightly"]\n', "gates.0.on: 'nightly' is not one of final, completion"),
        (GATE + 'on = ["topic:review.ready"]\n', "needs a workflow of hats"),
        (GATE + 'on_failure = "explode"\n', "gates.0.on_failure: 'explode'"),
        (
            GATE + '[tamper]\non_hit = "maybe"\n',
            "tamper.on_hit: 'maybe' is not one of block, warn, stop",
        ),
        (GATE + '[tamper]\npin = "head"\n', "tamper.pin: 'head' is not one of base, off"),
        (GATE + '[tamper]\nactions = { todo_added = "warn" }\n', "is not a detector"),
        (GATE + '[tamper]\nprotect = ["../secrets"]\n', "tamper.protect: '../secrets'"),
        (GATE + '[postconditions]\non_failure = "x"\n', "postconditions.on_failure: 'x'"),
        (GATE + '[postconditions]\ntodo_markers = [" "]\n', "a marker is blank"),
    ],
)
def test_a_bad_gate_or_screen_setting_is_refused_naming_its_key(text: str, message: str) -> None:
    assert message in refused(text)


def test_a_topic_gate_in_a_workflow_of_hats_records_its_patterns() -> None:
    text = HATS + GATE + 'on = ["topic:review.*", "final"]\n'
    (gate,) = parse_config(text, "ralph.toml").loop_policy().gates
    assert gate.on == (GateBoundary.TOPIC, GateBoundary.FINAL)
    assert gate.topics == ("review.*",)
    assert gate.on_topic("review.ready")
    assert not gate.on_topic("build.done")


@pytest.mark.parametrize(
    ("on", "message"),
    [
        ('["topic:LOOP_COMPLETE"]', "names a topic the loop acts on; use completion"),
        ('["topic:**"]', "names a topic the loop acts on"),
        ('["topic:build*"]', "'*' must be a whole segment"),
        ('["topic:"]', "empty pattern"),
    ],
)
def test_a_topic_gate_on_a_promise_or_a_bad_pattern_is_refused(on: str, message: str) -> None:
    assert message in refused(HATS + GATE + f"on = {on}\n")


def test_a_commit_gate_in_a_read_only_workflow_is_refused() -> None:
    text = HATS + "[loop]\ncommits = false\n" + GATE + 'on = ["commit"]\n'
    assert "commit never runs in a workflow with [loop] commits = false" in refused(text)
    clean = HATS + "[loop]\ncommits = false\n" + GATE + "[postconditions]\nclean_tree = true\n"
    assert "postconditions.clean_tree" in refused(clean)
