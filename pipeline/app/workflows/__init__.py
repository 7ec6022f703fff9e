"""Workflow presets: whole workflows (a ``[loop]`` and its ``[hats]``) shipped as data, read,
merged over a workspace's ``ralph.toml``, remembered for a resume, and the handoff between
the runs of a chain. See ``docs/architecture/topologies.md`` ("Presets").
"""

from pipeline.app.workflows._handoff import handoff_section
from pipeline.app.workflows._merge import KEPT_HATS, WORKFLOW_LOOP_KEYS, apply_preset
from pipeline.app.workflows._preset import Preset, PresetError, parse_preset
from pipeline.app.workflows._record import recall_workflow, remember_workflow
from pipeline.app.workflows._shipped import (
    DEFAULT_PRESET,
    load_preset,
    preset_names,
    shipped_presets,
)
from pipeline.app.workflows._workspace import config_with_preset

__all__ = [
    "DEFAULT_PRESET",
    "KEPT_HATS",
    "WORKFLOW_LOOP_KEYS",
    "Preset",
    "PresetError",
    "apply_preset",
    "config_with_preset",
    "handoff_section",
    "load_preset",
    "parse_preset",
    "preset_names",
    "recall_workflow",
    "remember_workflow",
    "shipped_presets",
]
