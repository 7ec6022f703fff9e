"""ralph-orchestrator's own configurations, translated by ``ralph init --from`` and run by
real ``ralph`` processes with the scripted agent, in real git repositories.

Its five core scenarios (``crates/ralph-core/tests/scenarios``) are replayed: each scripted
output of ``mock_responses`` is one activation, its ``<event topic="...">`` blocks published
and the rest printed, and the run gives the scenario's ``expected`` topics (the topic log:
what agents published and what ralph published for them), iterations (activations) and
completion. The ten files ralph refused before it modelled ralph-orchestrator's coordinator
run to completion, the coordinator taking up what no other hat does.

The agents the translation configures are replaced by the scripted agent under the same
names, and the default chain by one more such agent, ``main``: a hat's own chain (its
backend in the file) shows as the agent that ran it.
"""

from __future__ import annotations

import json
import re
import subprocess
import tomllib
from pathlib import Path
from typing import Any

import pytest
import tomli_w
import yaml

from pipeline.events import (
    HatActivated,
    InvocationStarted,
    PipelineEvent,
    RunCompleted,
    TerminationReason,
)
from pipeline.reducers.views import topic_log
from tests.runtime.workspace import ralph, scripted, stored_events
from tests.support import init_repository

pytestmark = pytest.mark.slow  # whole runs in subprocesses: seconds a test

SHIPPED = Path(__file__).parents[1] / "fixtures" / "orchestrator" / "v2.10.1"
SCENARIOS = SHIPPED / "crates" / "ralph-core" / "tests" / "scenarios"

COMMIT = '[[commit_message]]\nwrite.".agent/out/commit-message" = "Work of a hat"\n'
_EVENT = re.compile(r'<event topic="([^"]+)">\n?(.*?)</event>', re.DOTALL)


def _step(table: str, number: int, emit: list[tuple[str, str]], text: str = "") -> str:
    """One scripted step under ``[[table]]``: it changes the work tree (so the activation
    has something to commit), prints ``text`` and publishes ``emit``."""
    topics = ", ".join(f"[{json.dumps(topic)}, {json.dumps(payload)}]" for topic, payload in emit)
    lines = [f"[[{table}]]", f'write."work.txt" = "step {number}"', f"emit = [{topics}]"]
    if text:
        lines.append(f"print = {json.dumps(text)}")
    return "\n".join(lines) + "\n"


def _translated(
    tmp_path: Path, fixture: Path, script: str, command: list[str] | None = None
) -> Path:
    """A git repository whose ralph.toml ``ralph init --from fixture`` wrote (with a
    ``command``: the golden translation, which ``tests/config/test_orchestrator_shipped.py``
    holds equal to it, saving a process), every agent it configures the scripted agent
    following ``script`` (or ``command``), and the default chain the agent ``main`` (the same
    program), so that a hat's own chain shows in the run."""
    root = init_repository(tmp_path / "ws")
    if command is None:
        result = ralph("init", "--from", str(fixture), "-C", str(root), cwd=root)
        assert result.returncode == 0, result.stdout + result.stderr
        assert "coordinator is the hat" in result.stdout
    else:
        (root / "ralph.toml").write_text(fixture.with_suffix(".toml").read_text())
    config = tomllib.loads((root / "ralph.toml").read_text())
    program = command or scripted("script.toml")
    agent = {"command": program, "timeout_s": 60, "inactivity_timeout_s": 30}
    config["agents"] = {name: dict(agent) for name in [*config.get("agents", {}), "main"]}
    config["chains"] = {"default": ["main"]}
    config["budgets"] |= {"backoff_base_ms": 10, "backoff_cap_ms": 20}
    config["sandbox"] = {"mode": "off"}
    (root / "ralph.toml").write_text(tomli_w.dumps(config))
    prompt = root / str(config["prompt_file"])
    prompt.parent.mkdir(parents=True, exist_ok=True)
    prompt.write_text("Build the feature.\n")
    (root / ".ralph").mkdir(exist_ok=True)
    (root / ".ralph" / "script.toml").write_text(script + COMMIT)
    (root / ".gitignore").write_text(".ralph/\n")
    subprocess.run(["git", "add", "--all"], cwd=root, check=True)
    subprocess.run(["git", "commit", "--quiet", "-m", "start"], cwd=root, check=True)
    return root


def _run(root: Path) -> list[PipelineEvent]:
    result = ralph("run", "--plain", cwd=root, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    return stored_events(root)


def _woken(events: list[PipelineEvent]) -> list[tuple[str, str]]:
    return [(e.hat, e.topic) for e in events if isinstance(e, HatActivated)]


def _completed(events: list[PipelineEvent]) -> bool:
    (ended,) = [e for e in events if isinstance(e, RunCompleted)]
    return ended.reason is TerminationReason.COMPLETED


# The five core scenarios ---------------------------------------------------------------------


def _replay(scenario: dict[str, Any]) -> str:
    """The script replaying ``mock_responses``: one step of the ``hat`` list each (whatever
    hat wears it, as ralph-orchestrator's mock backend answers in order)."""
    steps = []
    for number, response in enumerate(scenario["mock_responses"], 1):
        emit = [(topic, payload.strip()) for topic, payload in _EVENT.findall(response)]
        text = _EVENT.sub("", response).strip()
        steps.append(_step("hat", number, emit, text))
    return "".join(steps)


@pytest.mark.parametrize("path", sorted(SCENARIOS.glob("*.yml")), ids=lambda p: p.stem)
def test_each_core_scenario_replays_as_expected(path: Path, tmp_path: Path) -> None:
    """The scenario's expected topics in order (injected defaults as ralph's own entries),
    its number of iterations and its completion; the topics it says the coordinator handles
    woke the coordinator; each hat ran on its own chain, the backend the file gives it, or
    on the default chain when ralph has no preset for that backend (mixed_backends' kiro,
    which the translation names as not translated)."""
    scenario = yaml.safe_load(path.read_text())
    expected = scenario["expected"]
    root = _translated(tmp_path, path, _replay(scenario))
    chains = {
        name: hat.get("chain", ["main"])[0]
        for name, hat in tomllib.loads((root / "ralph.toml").read_text())["hats"].items()
    }
    events = _run(root)
    ran: list[tuple[str, str]] = []
    hat = ""
    for event in events:
        if isinstance(event, HatActivated):
            hat = event.hat
        elif isinstance(event, InvocationStarted) and event.role.value == "developer":
            ran.append((hat, event.agent))
    assert ran == [(hat, chains[hat]) for hat, _ in _woken(events)]
    used = {agent for _, agent in ran} - {"main"}
    assert used <= set(expected.get("backends_used", []))
    assert bool(used) is ("backends_used" in expected)
    log = list(topic_log(events))
    assert [entry.topic for entry in log] == [e["topic"] for e in expected["events"]]
    assert len(_woken(events)) == expected["iterations"]
    assert _completed(events) is expected["completion"]
    injected = [entry.topic for entry in log if entry.hat == "ralph"]
    assert injected == expected.get("injected_events", [])
    by_coordinator = [topic for hat, topic in _woken(events) if hat == "coordinator"]
    assert set(expected.get("ralph_handled", [])) <= set(by_coordinator)


# The files ralph refused before -------------------------------------------------------------


def _hats(*steps: tuple[str, list[tuple[str, str]]]) -> str:
    """A script whose hats take ``steps`` in order, one step of the hat's own list each."""
    return "".join(_step(f"hats.{hat}", n, emit) for n, (hat, emit) in enumerate(steps, 1))


BUILD_DONE = [("build.done", "built")]
DONE = [("LOOP_COMPLETE", "all done")]
ONCE_REFUSED: dict[str, tuple[str, list[tuple[str, str]]]] = {
    # The builder triggers on task.start (which ralph-orchestrator reserves for its coordinator);
    # build.done is nobody's, so the coordinator gets it and completes.
    "presets/minimal/builder.yml": (
        _hats(("builder", BUILD_DONE), ("coordinator", DONE)),
        [("builder", "task.start"), ("coordinator", "build.done")],
    ),
    "presets/minimal/code-assist.yml": (
        _hats(("builder", BUILD_DONE), ("coordinator", DONE)),
        [("builder", "task.start"), ("coordinator", "build.done")],
    ),
    # Nobody triggers on task.start: the coordinator starts, hands build.task to the builder,
    # and completes once it is done.
    **{
        name: (
            _hats(
                ("coordinator", [("build.task", "the feature")]),
                ("builder", BUILD_DONE),
                ("coordinator", DONE),
            ),
            [
                ("coordinator", "task.start"),
                ("builder", "build.task"),
                ("coordinator", "build.done"),
            ],
        )
        for name in ("presets/minimal/kiro.yml", "presets/minimal/roo.yml")
    },
    "presets/minimal/preset-evaluator.yml": (
        _hats(
            ("evaluator", [("evaluation.complete", "3 presets evaluated")]),
            ("coordinator", [("EVALUATION_COMPLETE", "report written")]),
        ),
        [("evaluator", "evaluation.start"), ("coordinator", "evaluation.complete")],
    ),
    # The synthesizer publishes nothing: its default, the completion promise in the file, is
    # task.resume here, which the coordinator (ralph-coordinator: the file has a hat named
    # coordinator) takes up and completes.
    "presets/wave-review.yml": (
        _hats(
            ("coordinator", [("review.perspective", "ROLE: Rust reviewer")]),
            ("reviewer", [("review.done", "no critical issue")]),
            ("synthesizer", []),
            ("ralph-coordinator", [("review.complete", "approved")]),
        ),
        [
            ("coordinator", "review.start"),
            ("reviewer", "review.perspective"),
            ("synthesizer", "review.done"),
            ("ralph-coordinator", "task.resume"),
        ],
    ),
    "ralph.reviewer.yml": (
        _hats(
            ("scoper", [("scope.ready", "3 files")]),
            ("verifier", [("verification.done", "tests pass")]),
            ("reviewer", [("review.done", "one nit")]),
            ("synthesizer", []),
            ("coordinator", [("LOOP_COMPLETE", "verdict: APPROVE")]),
        ),
        [
            ("scoper", "review.start"),
            ("verifier", "scope.ready"),
            ("reviewer", "verification.done"),
            ("synthesizer", "review.done"),
            ("coordinator", "task.resume"),
        ],
    ),
    # The reviewer approves with a topic no hat triggers on (its scope is not enforced):
    # the coordinator takes it and completes.
    "ralph.bot.yml": (
        _hats(
            ("planner", [("work.start", "task 1")]),
            ("executor", [("work.done", "task 1 done")]),
            ("reviewer", [("work.approved", "the human said stop")]),
            ("coordinator", DONE),
        ),
        [
            ("planner", "plan.start"),
            ("executor", "work.start"),
            ("reviewer", "work.done"),
            ("coordinator", "work.approved"),
        ],
    ),
    "ralph.e2e.yml": (
        _hats(
            ("planner", [("tasks.ready", "2 tasks")]),
            ("builder", [("implementation.ready", "both")]),
            ("validator", [("validation.passed", "green")]),
            ("committer", [("commit.complete", "abc123")]),
            ("coordinator", DONE),
        ),
        [
            ("planner", "build.start"),
            ("builder", "tasks.ready"),
            ("validator", "implementation.ready"),
            ("committer", "validation.passed"),
            ("coordinator", "commit.complete"),
        ],
    ),
    # A loop meant never to end on its own: every topic its hats declare wakes another hat.
    # The analyst's topic nobody triggers on is the way out, through the coordinator.
    "ralph.m.yml": (
        _hats(
            ("explorer", [("idea.code", "cache the index")]),
            ("builder", [("build.complete", "cached")]),
            ("verifier", [("verified", "faster")]),
            ("shipper", [("round.shipped", "v1")]),
            ("deployer", [("deploy.skipped", "no target")]),
            ("analyst", [("rounds.over", "enough")]),
            ("coordinator", DONE),
        ),
        [
            ("explorer", "improve.start"),
            ("builder", "idea.code"),
            ("verifier", "build.complete"),
            ("shipper", "verified"),
            ("deployer", "round.shipped"),
            ("analyst", "deploy.skipped"),
            ("coordinator", "rounds.over"),
        ],
    ),
}


@pytest.mark.parametrize("name", sorted(ONCE_REFUSED))
def test_each_once_refused_file_runs_to_completion(name: str, tmp_path: Path) -> None:
    """``ralph init --from`` writes it (it refused it, exit 2, before the coordinator), and the
    run completes: its hats woken in the workflow's order, the coordinator taking the topics
    no other hat triggers on and publishing the completion promise."""
    script, order = ONCE_REFUSED[name]
    root = _translated(tmp_path, SHIPPED / name, script)
    events = _run(root)
    assert _woken(events) == order
    assert _completed(events)


# Every other file -------------------------------------------------------------------------

FINISHER = """
cat > /dev/null
mkdir -p .agent/out
printf 'Work of a hat' > .agent/out/commit-message
echo "$$" >> work.txt
for topic in $TOPICS; do
    printf '{"topic":"%s","payload":"done"}\\n' "$topic" >> "$RALPH_EVENTS_FILE"
done
"""
"""A shell agent: whatever hat it wears, it changes the work tree and publishes the topics
in ``TOPICS`` (the run's required events, then its completion promise)."""

RUN_ABOVE = {
    *ONCE_REFUSED,
    *(p.relative_to(SHIPPED).as_posix() for p in SCENARIOS.glob("*.yml")),
}
OTHERS = sorted(
    name
    for name in (p.relative_to(SHIPPED).as_posix() for p in SHIPPED.rglob("*.yml"))
    if name not in RUN_ABOVE
)


def test_every_shipped_file_runs_in_this_module() -> None:
    """The scenarios, the once-refused files and the others are the 34 files, each run."""
    assert len(RUN_ABOVE) + len(OTHERS) == 34
    assert len(OTHERS) == 19


@pytest.mark.parametrize("name", OTHERS)
def test_each_other_shipped_file_runs_and_completes(name: str, tmp_path: Path) -> None:
    """Translated (the golden translation), the run starts, wakes the hat its start wakes
    (the coordinator when no hat does) and completes when that hat publishes the required
    events and the completion promise: one activation."""
    golden = tomllib.loads((SHIPPED / name).with_suffix(".toml").read_text())
    loop = golden["loop"]
    topics = " ".join([*loop.get("required_events", []), loop["completion_promise"]])
    command = ["sh", "-c", FINISHER.replace("$TOPICS", topics)]
    root = _translated(tmp_path, SHIPPED / name, "", command)
    events = _run(root)
    ((_, topic),) = _woken(events)
    assert topic == loop["starting_event"]
    assert _completed(events)
