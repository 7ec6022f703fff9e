"""Every ralph-orchestrator setting without an equivalent in ralph is named by its YAML key
path, with the reason, in ``Translation.untranslated`` and in the header of the text."""

from __future__ import annotations

import tomllib
from typing import Any

import pytest
import yaml

from pipeline.core.config import Translation, translate_orchestrator_config

_HAT = {"name": "h", "triggers": ["a.start"], "publishes": ["a.done"]}


def _with(hat: dict[str, Any] | None = None, **top: Any) -> Translation:
    doc = {"hats": {"h": {**_HAT, **(hat or {})}}, **top}
    return translate_orchestrator_config(yaml.safe_dump(doc, sort_keys=False), "ralph.yml")


@pytest.mark.parametrize(
    ("translation", "path"),
    [
        (_with({"name": "Helper"}), "hats.h.name: the display name 'Helper' has no equivalent"),
        (_with({"scratchpad": ".s.md"}), "hats.h.scratchpad: no equivalent (ralph keeps its state"),
        (_with({"disallowed_tools": ["Edit"]}), "hats.h.disallowed_tools: no equivalent"),
        (_with({"timeout": 60}), "hats.h.timeout: no equivalent per hat; set timeout_s"),
        (_with({"concurrency": 4}), "hats.h.concurrency: no equivalent"),
        (_with({"aggregate": {"mode": "wait_for_all"}}), "hats.h.aggregate: no equivalent"),
        (_with({"import": "./h.yml"}), "hats.h.import: hat imports are not followed"),
        (_with({"colour": "blue"}), "hats.h.colour: unknown key; not translated"),
        (_with({"max_activations": 0}), "hats.h.max_activations: 0 never lets the hat run"),
        (
            _with({"triggers": ["a/b", "a.start"]}),
            "hats.h.triggers: 'a/b': segment 'a/b' has characters",
        ),
        (_with({"triggers": ["a.**"]}), "hats.h.triggers: 'a.**': ralph-orchestrator reads '**'"),
        (_with({"triggers": ["a*", "x"]}), "hats.h.triggers: 'a*': '*' must be a whole segment"),
        (_with({"publishes": ["a done"]}), "hats.h.publishes: 'a done': segment 'a done'"),
        (
            _with({"default_publishes": "a.*"}),
            "hats.h.default_publishes: 'a.*' is a pattern, not a topic",
        ),
        (
            _with({"triggers": []}),
            "hats.h: left out: it has no triggers, and a hat of a ralph topology",
        ),
        (_with({"triggers": ["a b"]}), "hats.h: left out: none of its triggers can be kept"),
        (
            translate_orchestrator_config("hats: {'code reviewer': {triggers: [a]}}", "ralph.yml"),
            "hats.'code reviewer': left out: 'code reviewer' cannot name a ralph hat",
        ),
        (
            _with(events={"a.done": {"description": "done"}}),
            "events.a.done: topic descriptions have no equivalent",
        ),
        (_with(core={"scratchpad": "s.md"}), "core.scratchpad: no equivalent"),
        (_with(core={"specs_dir": "specs"}), "core.specs_dir: no equivalent"),
        (_with(core={"guardrails": ["x"]}), "core.guardrails: no equivalent; add the rules"),
        (_with(core={"bells": 1}), "core.bells: unknown key; not translated"),
        (_with(event_loop={"persistent": True}), "event_loop.persistent: no equivalent"),
        (
            _with(event_loop={"starting_hat": "h"}),
            "event_loop.starting_hat: deprecated in ralph-orchestrator",
        ),
        (
            _with(event_loop={"prompt": "Do it."}),
            "event_loop.prompt: an inline prompt has no equivalent",
        ),
        (_with(event_loop={"whistles": 1}), "event_loop.whistles: unknown key; not translated"),
        (
            _with(event_loop={"completion_promise": ""}),
            "event_loop.completion_promise: empty (refused by ralph-orchestrator)",
        ),
        (
            _with(event_loop={"completion_promise": "ALL DONE"}),
            "event_loop.completion_promise: 'ALL DONE': segment 'ALL DONE'",
        ),
        (_with(event_loop={"required_events": ["a b"]}), "event_loop.required_events: 'a b'"),
        (
            _with(event_loop={"max_iterations": 9}, max_iterations=3),
            "event_loop.max_iterations: overridden by the top-level max_iterations (3)",
        ),
        (_with(hooks={"enabled": True}), "hooks: no equivalent (ralph runs no lifecycle hooks)"),
        (_with(RObot={"enabled": True}), "RObot: no equivalent (a person answers"),
        (
            _with(agent_priority=["claude", "codex"]),
            "agent_priority: auto-detection order has no equivalent",
        ),
        (_with(skills={"enabled": True}), "skills: no equivalent"),
        (_with(gizmo=1), "gizmo: unknown key; not translated"),
        (
            _with(cli={"backend": "kiro"}),
            "cli.backend: 'kiro' is not one of ralph's agent presets (aider, claude, codex, "
            "gemini, opencode); configure [agents.kiro] with a command and name it in "
            "[chains] default",
        ),
        (_with(cli={"backend": "auto"}), "cli.backend: auto-detection has no equivalent"),
        (_with(cli={"idle_timeout_secs": 5}), "cli.idle_timeout_secs: interactive mode only"),
        (_with({"backend": "amp"}), "hats.h.backend: 'amp' is not one of ralph's agent presets"),
        (
            _with({"backend": {"type": "kiro", "agent": "strict"}}),
            "hats.h.backend: 'kiro' is not one of",
        ),
        (
            _with({"backend": {"command": "npx my-agent"}}),
            "hats.h.backend.command: 'npx my-agent' holds spaces",
        ),
        (
            _with({"subscribes_to": ["a.more"]}),
            "hats.h.subscribes_to: the hat's triggers are given; not translated",
        ),
        (
            _with({"default_publishes": "a.done"}, event_loop={"completion_promise": "a.done"}),
            "hats.h.default_publishes: the completion promise 'a.done'",
        ),
    ],
)
def test_each_setting_without_an_equivalent_is_named(translation: Translation, path: str) -> None:
    """The line names the YAML key path and says why, and the header lists it too."""
    assert any(line.startswith(path) for line in translation.untranslated), translation.untranslated
    assert f"#   {path}" in translation.toml_text


@pytest.mark.parametrize(
    "hat",
    [
        {"concurrency": 1},
        {"scratchpad": None},
        {"disallowed_tools": []},
        {"aggregate": {}},
        {"scratchpad": {"enabled": False}},
    ],
)
def test_a_setting_that_asks_for_nothing_is_not_listed(hat: dict[str, Any]) -> None:
    """Null, false, empty and one-at-a-time settings lose nothing when left out."""
    quiet = {"persistent": False, "prompt": ""}
    assert _with(hat, event_loop=quiet, memories={"enabled": False}).untranslated == ()


def test_reserved_triggers_of_ralph_orchestrator_are_kept() -> None:
    """task.start and task.resume are reserved there, but plain topics here."""
    data = tomllib.loads(_with({"triggers": ["task.start", "task.resume"]}).toml_text)
    assert data["hats"]["h"]["triggers"] == ["task.start", "task.resume"]
