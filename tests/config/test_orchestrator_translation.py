"""A ralph-orchestrator ``ralph.yml`` translates into a ``ralph.toml`` that means the same, and
everything without an equivalent is named, never dropped silently.

The fixtures under ``tests/fixtures/orchestrator`` are configurations of our own, shaped like
ralph-orchestrator's presets; each ``.yml`` has its expected translation beside it as ``.toml``
(``RALPH_UPDATE_SNAPSHOTS=1`` re-records them).
"""

from __future__ import annotations

import os
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from pipeline.core.config import (
    ConfigError,
    Translation,
    parse_config,
    translate_orchestrator_config,
)

FIXTURES = Path(__file__).parents[1] / "fixtures" / "orchestrator"
CASES = sorted(FIXTURES.glob("*.yml"))


def _translate(path: Path) -> Translation:
    return translate_orchestrator_config(path.read_text(encoding="utf-8"), path.name)


def _golden(path: Path, text: str) -> str:
    golden = path.with_suffix(".toml")
    if os.environ.get("RALPH_UPDATE_SNAPSHOTS") == "1":
        golden.write_text(text, encoding="utf-8", newline="")
    return golden.read_text(encoding="utf-8")


def test_the_fixtures_cover_the_presets_and_the_awkward_cases() -> None:
    """Each preset shape, the minimal topology and the custom-backend case has a fixture."""
    names = {path.stem for path in CASES}
    expected = {"builder-reviewer", "code-assist", "custom-backends", "debug", "research"}
    assert expected | {"review"} <= names


@pytest.mark.parametrize("path", CASES, ids=lambda p: p.stem)
def test_each_fixture_translates_to_its_golden_file(path: Path) -> None:
    """The translation is exactly the checked-in ``.toml`` beside the fixture."""
    text = _translate(path).toml_text
    assert text == _golden(path, text)


@pytest.mark.parametrize("path", CASES, ids=lambda p: p.stem)
def test_each_translated_hat_keeps_its_triggers_and_publishes(path: Path) -> None:
    """Every hat keeps the triggers and publishes of its YAML, less those named as not
    translated; a hat left out is named; every chain names a configured agent."""
    translation = _translate(path)
    data = tomllib.loads(translation.toml_text)
    source: dict[str, Any] = yaml.safe_load(path.read_text(encoding="utf-8"))
    hats = data.get("hats", {})
    for hat_id, hat in source["hats"].items():
        if hat_id not in hats:
            assert f"hats.{hat_id}: left out: " in "\n".join(translation.untranslated)
            continue
        for key in ("triggers", "publishes"):
            dropped = [line for line in translation.untranslated if f"hats.{hat_id}.{key}:" in line]
            kept = [p for p in hat.get(key, []) if not any(repr(p) in d for d in dropped)]
            assert hats[hat_id][key] == kept
            assert len(kept) + len(dropped) == len(hat.get(key, []))
    chains = [*data.get("chains", {}).get("default", [])]
    chains += [name for hat in hats.values() for name in hat.get("chain", [])]
    assert set(chains) <= set(data.get("agents", {}))


@pytest.mark.parametrize("path", CASES, ids=lambda p: p.stem)
def test_the_header_names_the_source_and_lists_what_is_not_translated(path: Path) -> None:
    """The text starts with comments naming the file and listing each untranslated line."""
    translation = _translate(path)
    comments = translation.toml_text.split("\n\n", 1)[0].splitlines()
    assert (
        comments[0]
        == f"# Translated by ralph from {path.name}, a ralph-orchestrator configuration."
    )
    assert all(line.startswith("# ") for line in comments)
    listed = [line.removeprefix("#   ") for line in comments if line.startswith("#   ")]
    assert listed == list(translation.untranslated)
    if not translation.untranslated:
        assert "# Everything in it was translated." in comments


@pytest.mark.parametrize("path", CASES, ids=lambda p: p.stem)
def test_each_translation_is_a_valid_ralph_toml(path: Path) -> None:
    """ralph's own parser accepts every translation, and the run it configures follows a
    topology with the YAML's hats, triggers and starting event."""
    translation = _translate(path)
    config = parse_config(translation.toml_text, "ralph.toml")
    document = tomllib.loads(translation.toml_text)
    topology = config.loop_policy().topology
    hats = document.get("hats", {})
    if not hats:
        assert topology is None
        return
    assert topology is not None
    assert [hat.name for hat in topology.hats] == list(hats)
    for hat in topology.hats:
        assert list(hat.triggers) == hats[hat.name]["triggers"]
    assert topology.starting_event == document.get("loop", {}).get("starting_event", "task.start")


def test_importing_the_configuration_package_imports_neither_yaml_nor_toml_writer() -> None:
    """PyYAML and tomli-w load only when a translation runs: commands stay fast."""
    code = "import sys, pipeline.core.config; print(sorted({'yaml', 'tomli_w'} & set(sys.modules)))"
    output = subprocess.run(
        [sys.executable, "-c", code], check=True, capture_output=True, text=True
    ).stdout
    assert output.strip() == "[]"


# Properties ---------------------------------------------------------------------------------

_SEGMENT = st.from_regex(r"[A-Za-z0-9_:-]{1,8}", fullmatch=True)
_TOPIC = st.lists(_SEGMENT, min_size=1, max_size=3).map(".".join)
# ralph-orchestrator's patterns: topics, '*' segments, or '*' alone (it has no '**').
_PATTERN = st.one_of(
    _TOPIC,
    st.just("*"),
    st.lists(st.one_of(_SEGMENT, st.just("*")), min_size=1, max_size=3).map(".".join),
)
_TEXT = st.one_of(
    st.text(st.characters(exclude_categories=["Cs"]), max_size=40),
    st.sampled_from(['say "done"\n', "a\nb\r\nc", "'''\"\"\"\\", "héllo\u2028wörld ✓\n\n", "\t"]),
)
_COUNT = st.integers(min_value=1, max_value=10**6)


def _maybe(strategy: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.one_of(st.none(), strategy)


@st.composite
def _hat(draw: st.DrawFn, hat_id: str) -> dict[str, Any]:
    hat: dict[str, Any] = {
        "name": hat_id,
        "description": draw(_TEXT),
        "triggers": draw(st.lists(_PATTERN, min_size=1, max_size=3)),
        "publishes": draw(st.lists(_TOPIC, max_size=3)),
        "default_publishes": draw(_maybe(_TOPIC)),
        "max_activations": draw(_maybe(_COUNT)),
        "instructions": draw(_maybe(_TEXT)),
    }
    return {key: value for key, value in hat.items() if value is not None}


@st.composite
def orchestrator_configs(draw: st.DrawFn) -> dict[str, Any]:
    """ralph.yml documents whose every setting has an equivalent in ralph."""
    ids = draw(
        st.lists(
            st.from_regex(r"[A-Za-z0-9_:-]{1,10}", fullmatch=True),
            min_size=1,
            max_size=4,
            unique=True,
        )
    )
    event_loop = {
        "starting_event": draw(_maybe(_TOPIC)),
        "completion_promise": draw(_maybe(_TOPIC)),
        "required_events": draw(_maybe(st.lists(_TOPIC, max_size=3))),
        "cancellation_promise": draw(_maybe(_TOPIC)),
        "enforce_hat_scope": draw(_maybe(st.booleans())),
        "max_iterations": draw(_maybe(_COUNT)),
        "max_runtime_seconds": draw(_maybe(_COUNT)),
        "max_consecutive_failures": draw(_maybe(_COUNT)),
        "max_cost_usd": draw(_maybe(st.floats(0, 1e6) | st.integers(0, 1000))),
    }
    return {
        "event_loop": {k: v for k, v in event_loop.items() if v is not None},
        "hats": {hat_id: draw(_hat(hat_id)) for hat_id in ids},
    }


@given(orchestrator_configs())
def test_hats_and_loop_settings_round_trip(doc: dict[str, Any]) -> None:
    """Reading the translation back gives each hat's triggers, publishes, default_publishes
    (but the completion promise, written as task.resume), max_activations and instructions and
    every loop setting exactly as the YAML says, and the coordinator last; nothing else is
    listed as untranslated; translating twice gives the same text."""
    text = yaml.safe_dump(doc, sort_keys=False)
    said = yaml.safe_load(text)  # what the YAML says, after PyYAML's own round trip
    translation = translate_orchestrator_config(text, "ralph.yml")
    assert translation == translate_orchestrator_config(text, "ralph.yml")
    assert all(".default_publishes: the completion promise" in u for u in translation.untranslated)
    data = tomllib.loads(translation.toml_text)
    *hats, coordinator = data["hats"]
    assert hats == list(said["hats"])
    assert coordinator == data["loop"]["coordinator"]
    promise = data["loop"]["completion_promise"]
    for hat_id, hat in said["hats"].items():
        got = data["hats"][hat_id]
        assert got["triggers"] == hat["triggers"]
        assert got["publishes"] == hat["publishes"]
        # Neither tool completes a run because a hat published nothing.
        default = hat.get("default_publishes")
        assert got.get("default_publishes") == ("task.resume" if default == promise else default)
        assert got.get("max_activations") == hat.get("max_activations")
        assert got.get("instructions", "") == hat.get("instructions", "")
        assert got.get("description", "") == hat["description"]
    loop, budgets, given_loop = data["loop"], data["budgets"], said["event_loop"]
    assert loop["starting_event"] == given_loop.get("starting_event", "task.start")
    assert loop["completion_promise"] == given_loop.get("completion_promise", "LOOP_COMPLETE")
    assert loop.get("required_events", []) == given_loop.get("required_events", [])
    assert loop.get("cancellation_promise") == given_loop.get("cancellation_promise")
    assert loop.get("enforce_hat_scope") == given_loop.get("enforce_hat_scope")
    assert budgets["max_iterations"] == given_loop.get("max_iterations", 100)
    assert budgets["max_runtime_s"] == given_loop.get("max_runtime_seconds", 14_400)
    assert budgets["max_consecutive_failures"] == given_loop.get("max_consecutive_failures", 5)
    cost = given_loop.get("max_cost_usd")
    assert budgets.get("max_cost_usd") == (None if cost is None else float(cost))


@given(name=st.text(max_size=30), source=st.text(min_size=1, max_size=30), key=st.text(max_size=20))
def test_any_text_in_a_listed_setting_keeps_the_header_to_comment_lines(
    name: str, source: str, key: str
) -> None:
    """Display names, file names and unknown keys holding newlines or control characters are
    escaped: each untranslated item is one line and the text is still TOML."""
    unknown = f"x-{key}"  # never one of ralph-orchestrator's own keys
    doc = {"hats": {"h": {"name": name, "triggers": ["a"], unknown: 1}}, unknown: 2}
    translation = translate_orchestrator_config(yaml.safe_dump(doc), source)
    assert all("\n" not in line and "\r" not in line for line in translation.untranslated)
    tomllib.loads(translation.toml_text)


# Bad input ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("hats: [unclosed", "ralph.yml: not valid YAML (line 1, column 16)"),
        ("a: b: c", "ralph.yml: not valid YAML (line 1, column 5)"),
        ("\tx: 1", "ralph.yml: not valid YAML"),
        ("", "ralph.yml: expected a mapping of settings at the top level, got nothing"),
        (
            "- builder\n- reviewer",
            "ralph.yml: expected a mapping of settings at the top level, got a list",
        ),
        ("just words", "got a string"),
        ("[" * 5000, "ralph.yml: not a configuration: nested too deeply"),
        ("hats: [builder]", "ralph.yml: hats: expected a mapping, got a list"),
        (
            "hats:\n  builder: yes",
            "ralph.yml: hats.builder: expected a hat (a mapping), got true or false",
        ),
        ("hats:\n  builder:", "ralph.yml: hats.builder: expected a hat (a mapping), got null"),
        ("hats: {1: {triggers: [a]}}", "ralph.yml: hats: keys must be strings, got an integer 1"),
        (
            "hats: {b: {triggers: build.start}}",
            "ralph.yml: hats.b.triggers: expected a list of strings, got a string",
        ),
        (
            "hats: {b: {triggers: [a, 2]}}",
            "ralph.yml: hats.b.triggers[1]: expected a string, got an integer",
        ),
        (
            "hats: {b: {triggers: [a], publishes: {x: 1}}}",
            "hats.b.publishes: expected a list of strings, got a mapping",
        ),
        (
            "hats: {b: {triggers: [a], default_publishes: [a]}}",
            "hats.b.default_publishes: expected a string, got a list",
        ),
        (
            "hats: {b: {triggers: [a], max_activations: '3'}}",
            "hats.b.max_activations: expected a whole number, got a string",
        ),
        (
            "hats: {b: {triggers: [a], max_activations: -1}}",
            "hats.b.max_activations: must be from 0, got -1",
        ),
        (
            "hats: {b: {triggers: [a], max_activations: true}}",
            "hats.b.max_activations: expected a whole number, got true or false",
        ),
        (
            "hats: {b: {triggers: [a], instructions: [x]}}",
            "hats.b.instructions: expected a string, got a list",
        ),
        (
            "hats: {b: {triggers: [a], backend_args: [x], args: [y]}}",
            "hats.b: give backend_args or its alias args, not both",
        ),
        (
            "hats: {b: {triggers: [a], backend: 3}}",
            "hats.b.backend: expected a mapping, got an integer",
        ),
        (
            "hats: {b: {triggers: [a], backend: {args: [x]}}}",
            "hats.b.backend: expected a backend name, or a mapping with type or command",
        ),
        ("hats: {b: {backend: 3}}", "hats.b.backend: expected a mapping, got an integer"),
        ("event_loop: [x]", "ralph.yml: event_loop: expected a mapping, got a list"),
        (
            "event_loop: {max_iterations: many}",
            "event_loop.max_iterations: expected a whole number, got a string",
        ),
        (
            "event_loop: {max_cost_usd: .nan}",
            "event_loop.max_cost_usd: must be a number from 0, got nan",
        ),
        (
            "event_loop: {enforce_hat_scope: sure}",
            "event_loop.enforce_hat_scope: expected true or false, got a string",
        ),
        (
            "event_loop: {required_events: review.passed}",
            "event_loop.required_events: expected a list of strings",
        ),
        ("max_iterations: 2.5", "ralph.yml: max_iterations: expected a whole number, got a number"),
        ("cli: claude", "ralph.yml: cli: expected a mapping, got a string"),
        ("cli: {backend: [claude]}", "ralph.yml: cli.backend: expected a string, got a list"),
        ("events: [x]", "ralph.yml: events: expected a mapping, got a list"),
        ("core: 1", "ralph.yml: core: expected a mapping, got an integer"),
    ],
)
def test_bad_input_is_a_one_line_config_error_naming_the_source(text: str, message: str) -> None:
    """Text that is not YAML or a setting of the wrong shape or type is refused with one
    ConfigError line naming the file and the key path; never a traceback from inside."""
    with pytest.raises(ConfigError) as caught:
        translate_orchestrator_config(text, "ralph.yml")
    assert message in str(caught.value)
    assert str(caught.value).startswith("ralph.yml: ")
    assert "\n" not in str(caught.value)
    assert isinstance(caught.value, ValueError)
