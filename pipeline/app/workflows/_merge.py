"""A preset's workflow over a workspace's ``ralph.toml`` (pure: text in, text out).

A preset is a whole workflow, so it replaces the workspace's workflow as a whole; everything
else stays the workspace's:

- ``[hats]``: every table of the workspace goes (a topology's hats, and the planner's,
  developer's and reviewer's hats, which configure the built-in pipeline's phases), except
  ``committer`` and ``fixer`` (commit messages and dev-fix serve every workflow); then the
  preset's tables are added, a preset's table replacing a kept one of the same name. A chain
  a dropped role hat gave (``[hats.developer] chain``) moves to ``[chains]``, so the agents
  that work stay the workspace's.
- ``[loop]``: the keys that name the workflow's topics go (:data:`WORKFLOW_LOOP_KEYS`:
  ``starting_event``, ``coordinator``, ``commits``, ``completion_promise``,
  ``required_events``: another workflow's topics mean nothing in this one; and
  ``review_completion``, the built-in pipeline's); the guards stay
  (``enforce_hat_scope``, ``cancellation_promise``, ``stale_repeats``, ``max_task_blocks``,
  ``max_abandoned_tasks``, ``human_timeout_s``, ``max_formatting_retries``), and every key the
  preset sets wins.
- Everything else (``prompt_file``, ``branch``, ``rebase_onto``, ``validate``, ``[budgets]``,
  ``[prices]``, ``[agents]``, ``[chains]``, ``[store]``, ``[redaction]``, ``[git]``) is the
  workspace's, untouched.

The result is TOML text (the workspace's comments are not kept: it is read, not shown); the
caller parses it like any ``ralph.toml``, so every mistake is named as usual.
"""

from __future__ import annotations

import tomllib
from typing import Any, Final

from pipeline.app.workflows._preset import Preset
from pipeline.core.config import ConfigError, dump_toml

__all__ = ["KEPT_HATS", "WORKFLOW_LOOP_KEYS", "apply_preset"]

WORKFLOW_LOOP_KEYS: Final = (
    "starting_event",
    "coordinator",
    "commits",
    "completion_promise",
    "required_events",
    "review_completion",
)
"""The ``[loop]`` keys that belong to a workflow: a preset's replace the workspace's."""

KEPT_HATS: Final = ("committer", "fixer")
"""The workspace's hats a preset keeps (unless it has its own of that name)."""

_PIPELINE_ROLES: Final = ("planner", "developer", "reviewer")


def _table(value: object) -> dict[str, Any]:
    return dict(value) if isinstance(value, dict) else {}


def _is_role_hat(value: object) -> bool:
    return isinstance(value, dict) and "triggers" not in value


def apply_preset(workspace_text: str, preset: Preset, source: str) -> str:
    """The ``ralph.toml`` text of ``workspace_text`` (read from ``source``) with ``preset``'s
    workflow instead of its own, as the module's docstring says. Raises
    :class:`~pipeline.core.config.ConfigError` when the workspace's text is not TOML."""
    try:
        data = tomllib.loads(workspace_text)
    except tomllib.TOMLDecodeError as error:
        raise ConfigError(f"{source}: not valid TOML: {error}") from error
    workflow = preset.workflow()
    hats = _table(data.pop("hats", None))
    chains = _table(data.get("chains"))
    for role in _PIPELINE_ROLES:
        hat = _table(hats.get(role))
        if "chain" in hat and "triggers" not in hat and role not in chains:
            chains[role] = hat["chain"]
    if chains:
        data["chains"] = chains
    kept = {name: hats[name] for name in KEPT_HATS if _is_role_hat(hats.get(name))}
    merged_hats = kept | workflow.get("hats", {})
    loop = {
        key: value
        for key, value in _table(data.pop("loop", None)).items()
        if key not in WORKFLOW_LOOP_KEYS
    }
    merged_loop = loop | workflow.get("loop", {})
    if merged_hats:
        data["hats"] = merged_hats
    if merged_loop:
        data["loop"] = merged_loop
    named = " ".join(source.splitlines())  # a comment ends at a line break
    header = (
        f"# {named} with the workflow of the preset {preset.name}: {preset.description}\n"
        "# (its [loop] and [hats] as ralph run --preset applies them)\n\n"
    )
    return header + dump_toml(data)
