"""``ralph init``, ``run`` and ``resume`` as real subprocesses: setup errors before any agent."""

from __future__ import annotations

from pathlib import Path

import pytest

from pipeline.app.workspace import open_store, open_workspace
from pipeline.core.config import PRESETS, AgentConfig, HatConfig, PromptVia, parse_config
from pipeline.events import RunCompleted
from pipeline.handlers.runtime import WorkspaceLayout
from tests.runtime.workspace import (
    FINISH_EVERYTHING,
    make_workspace,
    ralph,
    scripted,
    stored_events,
    then_finish,
)

pytestmark = pytest.mark.slow  # whole runs in subprocesses: seconds a test


def started_any_agent(root: Path) -> bool:
    """Whether the scripted agent ever ran, or a run was ever started, in ``root``."""
    scripted = root / ".agent" / "scripted-agent-state.json"
    return scripted.exists() or (root / ".ralph" / "runs").exists()


@pytest.mark.parametrize(
    ("mistake", "expected"),
    [
        ("[budgets]\nmax_iterationz = 3\n", "budgets.max_iterationz: unknown key"),
        ('[budgets]\nmax_iterations = "3"\n', "budgets.max_iterations: expected an integer"),
        ('[chains]\nreviewer = ["nobody"]\n', "chains.reviewer: names agent 'nobody'"),
    ],
)
def test_a_config_mistake_is_one_line_naming_the_key_before_any_agent_starts(
    tmp_path: Path, mistake: str, expected: str
) -> None:
    """Exit 2, one line on stderr with the file and the key; no agent started."""
    root = make_workspace(
        tmp_path / "ws", scripts={"s.toml": FINISH_EVERYTHING}, agents={"main": scripted("s.toml")}
    )
    config = root / "ralph.toml"
    text = config.read_text()
    if mistake.startswith("[budgets]"):
        text = text.replace("[budgets]\n", mistake, 1)
    else:
        text = text.replace("[chains]\n", mistake, 1)
    config.write_text(text)
    result = ralph("run", cwd=root)
    assert result.returncode == 2, result.stdout + result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert str(config) in lines[0]
    assert expected in lines[0]
    assert not started_any_agent(root)


def test_run_outside_a_git_repository_or_without_config_says_what_to_do(tmp_path: Path) -> None:
    """No ralph.toml: points to ``ralph init``; not a repository: points to ``git init``."""
    result = ralph("run", cwd=tmp_path)
    assert result.returncode == 2
    assert "run `ralph init`" in result.stderr
    (tmp_path / "ralph.toml").write_text(
        '[agents.a]\ncommand = ["true"]\n[chains]\ndefault = ["a"]\n'
    )
    result = ralph("run", "--prompt", "x", cwd=tmp_path)
    assert result.returncode == 2
    assert "not a git repository" in result.stderr
    assert not (tmp_path / ".ralph" / "runs").exists()


def test_a_missing_or_empty_prompt_is_refused(tmp_path: Path) -> None:
    """No PROMPT.md and no --prompt: a clear error; so is an empty --prompt."""
    root = make_workspace(tmp_path / "ws", scripts={}, agents={"main": ["true"]})
    (root / "PROMPT.md").unlink()
    result = ralph("run", cwd=root)
    assert result.returncode == 2
    assert "PROMPT.md does not exist" in result.stderr
    assert ralph("run", "--prompt", "  ", cwd=root).returncode == 2
    both = ralph("run", "--prompt", "a", "--prompt-file", "x.md", cwd=root)
    assert both.returncode == 2
    assert "not both" in both.stderr


def test_run_with_a_prompt_text_completes_with_exit_0(tmp_path: Path) -> None:
    """``--prompt TEXT`` needs no PROMPT.md; a finished run exits 0."""
    root = make_workspace(
        tmp_path / "ws", scripts={"s.toml": FINISH_EVERYTHING}, agents={"main": scripted("s.toml")}
    )
    (root / "PROMPT.md").unlink()
    result = ralph("run", "--prompt", "Say hello", "--quiet", cwd=root)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Exit status 0: completed" in result.stdout
    resumed = ralph("resume", cwd=root)
    assert resumed.returncode == 0  # nothing left to do: it reports the finished run
    assert "completed" in resumed.stdout
    unknown = ralph("resume", "no-such-run", cwd=root)
    assert unknown.returncode == 2
    assert "no run 'no-such-run'" in unknown.stderr


@pytest.mark.parametrize(("durability", "synchronous"), [("full", "FULL"), ("process", "NORMAL")])
def test_store_durability_sets_how_commits_are_synced_and_a_run_completes(
    tmp_path: Path, durability: str, synchronous: str
) -> None:
    """``[store] durability``: "full" syncs every fact a handler acted on, "process" syncs
    none; either way a run completes and every fact is in the store."""
    root = make_workspace(
        tmp_path / "ws",
        scripts={"s.toml": FINISH_EVERYTHING},
        agents={"main": scripted("s.toml")},
        extra=f'[store]\ndurability = "{durability}"\n',
    )
    with open_store(open_workspace(root)) as store:
        assert store.synchronous == synchronous
    result = ralph("run", "--quiet", cwd=root)
    assert result.returncode == 0, result.stdout + result.stderr
    assert isinstance(stored_events(root)[-1], RunCompleted)


def test_init_writes_a_starter_config_that_parses_and_never_overwrites(tmp_path: Path) -> None:
    """The starter parses and its default chain names only the agents it configures (none
    when no agent CLI is on PATH, as on a machine without one); a second init leaves the
    file alone."""
    result = ralph("init", "-C", str(tmp_path), cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    text = (tmp_path / "ralph.toml").read_text()
    config = parse_config(text, "ralph.toml")
    assert list(config.chains.default) == list(config.agents)
    again = ralph("init", "-C", str(tmp_path), cwd=tmp_path)
    assert again.returncode == 2
    assert "exists already" in again.stderr
    assert (tmp_path / "ralph.toml").read_text() == text


@pytest.mark.parametrize("name", sorted(PRESETS))
def test_every_preset_is_a_headless_argv_with_its_model_flag(name: str) -> None:
    """A preset resolves to its program's argv; ``model`` adds the preset's flag; args last."""
    plain = AgentConfig(preset=name).invocation()
    assert plain.argv[0] == PRESETS[name].argv[0]
    if plain.prompt_via is PromptVia.FILE:
        assert any("{prompt_file}" in a for a in plain.argv)
    tuned = AgentConfig(preset=name, model="m-1", args=("--extra",)).invocation()
    assert tuned.argv[-3:] == (PRESETS[name].model_flag, "m-1", "--extra")
    # An escalation rung's model wins over the hat's and the agent's, through the same flag.
    hat = HatConfig(model="m-hat", args=("--hat",))
    rung = AgentConfig(preset=name, model="m-1").invocation(hat, "m-rung")
    assert rung.argv[-3:] == (PRESETS[name].model_flag, "m-rung", "--hat")
    assert "m-1" not in rung.argv
    assert "m-hat" not in rung.argv


def test_the_runtime_budget_ends_the_run_with_exit_2(tmp_path: Path) -> None:
    """``max_runtime_s``: once spent, the next phase does not begin; the run finalizes with
    ``max_runtime`` and exits 2."""
    slow = then_finish(
        "development", "[[development]]\ndelay_s = 1.5\n" + FINISH_EVERYTHING.split("\n", 2)[2]
    )
    root = make_workspace(
        tmp_path / "ws",
        scripts={"s.toml": slow},
        agents={"main": scripted("s.toml")},
        budgets="max_runtime_s = 1",
    )
    result = ralph("run", cwd=root)
    assert result.returncode == 2, result.stdout + result.stderr
    assert "error.budget_exceeded budget=runtime" in result.stdout
    assert "Exit status 2: max_runtime" in result.stdout


_HUGE = 9223372036854775807


@pytest.mark.parametrize(
    ("settings", "key"),
    [
        ({"budgets": f"max_runtime_s = {_HUGE}"}, "budgets.max_runtime_s"),
        ({"budgets": "max_runtime_s = -1"}, "budgets.max_runtime_s"),
        ({"extra": f"[loop]\nhuman_timeout_s = {_HUGE}"}, "loop.human_timeout_s"),
        ({"extra": f"[loop]\nstale_repeats = {_HUGE}"}, "loop.stale_repeats"),
        ({"agent_options": "timeout_s = -1"}, "agents.main.timeout_s"),
        ({"agents": {"main": ["python3\0-c"]}}, "agents.main.command[0]"),
        ({"agents": {"main": [""]}}, "agents.main.command"),
        ({"agents": {"main": ["ralph-test-no-such-agent"]}}, "agents.main.command"),
        ({"extra": 'validate = ["ralph-test-no-such-check"]'}, "validate"),
        ({"extra": 'validate = ["make\\u0000test"]'}, "validate[0]"),
    ],
    ids=[
        "huge-runtime",
        "negative-runtime",
        "huge-human-timeout",
        "huge-stale-repeats",
        "negative-timeout",
        "nul-in-command",
        "empty-program",
        "missing-agent-program",
        "missing-validate-program",
        "nul-in-validate",
    ],
)
def test_a_setting_a_run_would_trip_over_later_is_refused_before_the_store_exists(
    tmp_path: Path, settings: dict[str, object], key: str
) -> None:
    """Values out of range, a NUL in any string and a program that cannot be found: exit 2
    with one line naming the key, before the store is created and before any agent."""
    options: dict[str, object] = {
        "scripts": {"s.toml": FINISH_EVERYTHING},
        "agents": {"main": scripted("s.toml")},
        **settings,
    }
    if "budgets" in settings:
        options["budgets"] = f"max_retries_per_agent = 0\n{settings['budgets']}"
    if "agent_options" in settings:
        options["agent_options"] = f"inactivity_timeout_s = 30\n{settings['agent_options']}"
    root = make_workspace(tmp_path / "ws", **options)  # type: ignore[arg-type]
    result = ralph("run", cwd=root)
    assert result.returncode == 2, result.stdout + result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert "Traceback" not in result.stderr
    assert f"{key}:" in lines[0], lines[0]
    assert not WorkspaceLayout(root=root).store.exists()
    assert not started_any_agent(root)


def test_run_takes_p_and_max_iterations_as_the_rust_tool_does(tmp_path: Path) -> None:
    """``-p TEXT`` is the prompt; ``--max-iterations N`` bounds this run's development
    iterations (recorded in RunStarted); 0 is a usage error."""
    from pipeline.events import RunStarted

    partial = FINISH_EVERYTHING.replace('"completed\\ndone"', '"partial\\nmore to do"')
    root = make_workspace(
        tmp_path / "ws",
        scripts={"s.toml": partial},
        agents={"main": scripted("s.toml")},
        budgets="max_iterations = 5\nmax_retries_per_agent = 0",
    )
    refused = ralph("run", "-p", "Say hello", "--max-iterations", "0", cwd=root)
    assert refused.returncode == 2, refused.stdout + refused.stderr
    result = ralph("run", "-p", "Say hello", "--max-iterations", "1", cwd=root)
    assert result.returncode == 2, result.stdout + result.stderr
    assert "Exit status 2: max_iterations" in result.stdout
    started = next(e for e in stored_events(root) if isinstance(e, RunStarted))
    assert started.budget.max_iterations == 1
    saved = WorkspaceLayout(root=root).saved_prompt(started.run_id)
    assert ".git" in saved.parts  # out of reach of an agent's git clean
    assert saved.read_text() == "Say hello"
