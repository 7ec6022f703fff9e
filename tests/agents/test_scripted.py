"""The scripted agent (``python -m pipeline.app.agents.scripted``): it checks its script as
strictly as the engine checks its configuration, names every problem on one line, and starts
without the heavy modules, since tests start it thousands of times. Real processes."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

AGENT = [sys.executable, "-m", "pipeline.app.agents.scripted"]
ROOT = Path(__file__).resolve().parents[2]


def _run(script: str, cwd: Path, kind: str = "default") -> subprocess.CompletedProcess[str]:
    (cwd / "script.toml").write_text(script)
    env = {**os.environ, "PYTHONPATH": str(ROOT), "RALPH_PROMPT_KIND": kind}
    return subprocess.run(
        [*AGENT, "script.toml"], cwd=cwd, env=env, capture_output=True, text=True, check=False
    )


def test_a_malformed_script_exits_2_naming_every_problem_on_one_line(tmp_path: Path) -> None:
    """Text for a number, a number for a flag, a half pair, an unknown field and an unknown
    table: exit 2, one line, each problem with where it is; nothing is coerced."""
    script = (
        '[[default]]\nexit = "1"\nhang = 1\nemit = [["only a topic"]]\nbogus = 1\n'
        "[[hats.critic]]\ndelay_s = true\n[elsewhere]\n"
    )
    done = _run(script, tmp_path)
    assert done.returncode == 2
    (line,) = done.stderr.splitlines()
    for said in (
        "expected an integer, got '1' @ $.default[0].exit",
        "expected a boolean, got 1 @ $.default[0].hang",
        "expected a [topic, payload] pair, got ['only a topic'] @ $.default[0].emit[0]",
        "extra field 'bogus' @ $.default[0]",
        "expected a number, got True @ $.hats.critic[0].delay_s",
        "extra field 'elsewhere' @ $",
    ):
        assert said in line
    assert not (tmp_path / ".agent").exists()  # refused before any step is counted


def test_a_script_it_cannot_read_outside_the_workspace_says_to_move_it_in(
    tmp_path: Path,
) -> None:
    """A script named outside the workspace that it cannot read (as in ralph's sandbox, which
    shows an agent only its workspace): exit 2, and the line says to put it in the workspace;
    a missing script inside it says only that it is missing."""
    root = tmp_path / "ws"
    root.mkdir()
    env = {**os.environ, "PYTHONPATH": str(ROOT), "RALPH_WORKSPACE_ROOT": str(root)}
    outside = tmp_path / "script.toml"
    done = subprocess.run(
        [*AGENT, str(outside)], cwd=root, env=env, capture_output=True, text=True, check=False
    )
    assert done.returncode == 2
    (line,) = done.stderr.splitlines()
    assert f"cannot read the script {outside}: No such file or directory" in line
    assert f"it is outside the workspace {root}" in line
    assert "put the script in it, e.g. under .ralph/" in line
    inside = subprocess.run(
        [*AGENT, ".ralph/script.toml"], cwd=root, env=env, capture_output=True, text=True
    )
    assert inside.returncode == 2
    assert "outside the workspace" not in inside.stderr


def test_each_kind_moves_through_its_steps_and_the_last_repeats(tmp_path: Path) -> None:
    """A kind's own steps come before the default ones; the last step repeats once the list
    is used up; a whole number is a valid delay."""
    script = (
        '[[planning]]\nprint = "plan one"\n[[planning]]\nprint = "plan two"\ndelay_s = 0\n'
        '[[default]]\nprint = "anything"\nexit = 3\n'
    )
    said = [_run(script, tmp_path, "planning").stdout.strip() for _ in range(3)]
    assert said == ["plan one", "plan two", "plan two"]
    other = _run(script, tmp_path, "review")
    assert (other.stdout.strip(), other.returncode) == ("anything", 3)


def test_the_agent_starts_without_the_heavy_modules(tmp_path: Path) -> None:
    """Having loaded its script, the agent has not imported attrs, cattrs or
    subprocess (together they were more than half of each start)."""
    (tmp_path / "script.toml").write_text('[[default]]\nwrite."a.txt" = "a"\n')
    probe = (
        "import sys; from pathlib import Path; import pipeline.app.agents.scripted as agent; "
        "agent.load_script(Path('script.toml')); print(' '.join(sys.modules))"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, "-c", probe], cwd=tmp_path, env=env, capture_output=True, text=True
    )
    loaded = set(done.stdout.split())
    assert "pipeline.app.agents.scripted" in loaded, done.stderr
    assert loaded.isdisjoint({"attr", "attrs", "cattrs", "subprocess"})
