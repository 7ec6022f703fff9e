"""A sixth agent CLI, declared in a test as one ``AgentPreset`` and registered through the
``ralph_pipeline.agents`` entry point group of a distribution on ``PYTHONPATH``, runs through
``ralph doctor`` and ``ralph run`` (the sandbox plan, usage reading) with no change to ralph."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from pipeline.events import SandboxChecked, UsageReported
from tests.runtime.workspace import ROOT, SHELL_REPORTS, make_workspace, ralph, stored_events

pytestmark = pytest.mark.slow

PLUGIN = '''
"""A CLI ralph was never told of: its whole preset."""

import re

from pipeline.core.agents import (
    AgentPreset,
    ModelEndpoints,
    OutputFormat,
    Pitfall,
    PromptVia,
    UsageFigures,
)
from pipeline.core.sandbox import ConfigFolder, Endpoint, SandboxPreset


def parse(lines):
    for line in lines:
        found = re.match(rb"sixth used (\\d+) tokens", line)
        if found:
            return UsageFigures(input_tokens=int(found[1]), output_tokens=0)
    return UsageFigures()


def no_mode(situation):
    if situation.environ.get("SIXTH_MODE"):
        return None
    return ("sixth keeps no history without SIXTH_MODE", "set SIXTH_MODE in its env")


PRESET = AgentPreset(
    name="sixth",
    argv=("sixth", "--headless"),
    prompt_via=PromptVia.STDIN,
    model_flag="--model",
    output=OutputFormat(name="sixth-text", usage=parse),
    sandbox=SandboxPreset(folders=(ConfigFolder(default=".sixth"),), pass_env=("SIXTH_*",)),
    endpoints=ModelEndpoints(defaults=(Endpoint("api.sixth.invalid", 443),)),
    install="install sixth: it ships with this test",
    pitfalls=(Pitfall(found=no_mode, fails=False),),
)
'''

AGENT = f"""#!/bin/sh
if [ "$1" = "--version" ]; then echo "sixth 1.0"; exit 0; fi
cat > /dev/null
mkdir -p "$HOME/.sixth"
printf '%s' "${{SIXTH_TOKEN:-missing}}" > "$HOME/.sixth/seen"
printf '%s' "${{OTHER_TOKEN:-withheld}}" > "$HOME/.sixth/other"
{SHELL_REPORTS}
echo "sixth used 12 tokens"
"""


SIXTH = '[agents.main]\npreset = "sixth"\n'


def _plugin(tmp_path: Path) -> dict[str, str]:
    """The distribution (its module and its entry point) and the program on PATH: the
    variables a ``ralph`` that knows them runs with."""
    site = tmp_path / "site"
    info = site / "sixth_cli-1.0.dist-info"
    info.mkdir(parents=True)
    (site / "sixth_cli.py").write_text(PLUGIN)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: sixth-cli\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text("[ralph_pipeline.agents]\nsixth = sixth_cli:PRESET\n")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "sixth").write_text(AGENT)
    (bin_dir / "sixth").chmod(0o755)
    home = tmp_path / "home"
    home.mkdir()
    return {
        "PYTHONPATH": f"{site}:{ROOT}",
        "PATH": f"{bin_dir}:{Path(shutil.which('git') or '/usr/bin/git').parent}:/usr/bin:/bin",
        "HOME": str(home),
        "SIXTH_TOKEN": "the-sixth-token",
        "OTHER_TOKEN": "another-token",
    }


def test_a_preset_registered_by_a_plugin_is_checked_by_the_doctor(tmp_path: Path) -> None:
    """``ralph doctor`` finds the plugin's program, asks its version, and says its declared
    pitfall; without the plugin, a run of the same ``ralph.toml`` is refused."""
    env = _plugin(tmp_path)
    root = make_workspace(tmp_path / "repo", scripts={}, agents={}, extra=SIXTH)
    doctor = ralph("doctor", cwd=root, env=env)
    said = doctor.stdout + doctor.stderr
    assert "sixth 1.0" in said, said
    assert "sixth keeps no history without SIXTH_MODE" in said, said
    unknown = ralph("run", "--plain", cwd=root, env={**env, "PYTHONPATH": str(ROOT)})
    assert unknown.returncode != 0
    assert "unknown preset 'sixth'" in unknown.stdout + unknown.stderr


@pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is not installed")
def test_a_preset_registered_by_a_plugin_runs_in_the_sandbox_it_declares(tmp_path: Path) -> None:
    """``ralph run`` with the sandbox required runs the plugin's CLI to completion: the network
    gate lets it reach its declared endpoint, its folder under ``$HOME`` is bound back
    writable, the secret its ``pass_env`` names reaches it and another does not, and its
    usage is read by its own parser."""
    env = _plugin(tmp_path)
    sandbox = 'mode = "required"'
    root = make_workspace(tmp_path / "repo", scripts={}, agents={}, extra=SIXTH, sandbox=sandbox)
    done = ralph("run", "--plain", cwd=root, env=env, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    facts = stored_events(root)
    (checked,) = [f for f in facts if isinstance(f, SandboxChecked)]
    assert checked.on, checked
    assert "api.sixth.invalid:443" in checked.endpoints
    folder = Path(env["HOME"]) / ".sixth"
    assert (folder / "seen").read_text() == "the-sixth-token"
    assert (folder / "other").read_text() == "withheld"
    usage = [f for f in facts if isinstance(f, UsageReported)]
    assert usage
    assert all(f.input_tokens == 12 for f in usage), usage


def test_a_plugin_that_fails_to_load_is_one_clear_error(tmp_path: Path) -> None:
    """A plugin whose module raises while it loads (here a preset built wrongly) stops
    ``ralph`` with exit 2 (as a bad ralph.toml does) and one line naming the entry point and
    the error, no traceback."""
    env = _plugin(tmp_path)
    broken = PLUGIN.replace('ConfigFolder(default=".sixth")', 'ConfigFolder(".sixth")')
    assert broken != PLUGIN
    (tmp_path / "site" / "sixth_cli.py").write_text(broken)
    root = make_workspace(tmp_path / "repo", scripts={}, agents={}, extra=SIXTH)
    done = ralph("doctor", cwd=root, env=env)
    said = done.stdout + done.stderr
    assert done.returncode == 2, said
    assert "entry point sixth = sixth_cli:PRESET" in said, said
    assert "cannot be loaded: TypeError" in said, said
    assert "Traceback" not in said, said
