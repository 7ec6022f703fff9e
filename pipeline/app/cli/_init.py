"""``ralph init``: a commented starter ``ralph.toml`` for the agent CLIs installed here, with
the repository's test command as the final check where it can be found, and as a commented
``[[gates]]`` example (I/O)."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Final

from pipeline.app.workflows import Preset
from pipeline.core.config import PRESETS, dump_toml, parse_config

__all__ = [
    "EXAMPLE_AGENT",
    "detect_test_command",
    "installed_presets",
    "looked_for",
    "starter_config",
    "write_starter",
]

_MAKE_TEST = re.compile(r"^test\s*:", re.M)
_NPM_PLACEHOLDER = "no test specified"  # what `npm init` writes: a test script that fails


def _read(path: Path) -> str:
    try:
        return path.read_text("utf-8", "replace")
    except OSError:
        return ""


def _npm_test(root: Path) -> bool:
    try:
        scripts = json.loads(_read(root / "package.json") or "{}").get("scripts") or {}
    except (json.JSONDecodeError, AttributeError):
        return False
    test = scripts.get("test") if isinstance(scripts, dict) else None
    return isinstance(test, str) and _NPM_PLACEHOLDER not in test


def _python_tests(root: Path) -> tuple[Path, list[Path]] | None:
    """The folder holding ``root``'s Python test files (``tests``, ``test`` or the top), and
    some of those files; None: none found."""
    for folder in (root / "tests", root / "test", root):
        # The top is searched flat: a ** there would walk a virtual environment.
        patterns = _TEST_FILES if folder == root else (*_TEST_FILES, "**/test_*.py")
        found = [path for pattern in patterns for path in folder.glob(pattern)][:_SAMPLED]
        if found:
            return folder, found
    return None


_TEST_FILES = ("test_*.py", "*_test.py")
_SAMPLED = 20
"""How many test files are read to tell pytest from unittest."""


def _python_test_command(root: Path) -> tuple[str, ...] | None:
    """pytest when the repository configures it or its tests use it; ``unittest`` when the
    tests are only ``unittest.TestCase``s (pytest may not even be installed); None: no
    Python tests."""
    configured = any(
        "pytest" in _read(root / name) for name in ("pyproject.toml", "setup.cfg", "tox.ini")
    )
    configured = configured or (root / "pytest.ini").is_file() or (root / "conftest.py").is_file()
    tests = _python_tests(root)
    if not configured and tests is None:
        return None
    # The project's own virtual environment has its dependencies; else python3.
    python = ".venv/bin/python" if (root / ".venv" / "bin" / "python").is_file() else "python3"
    if configured or tests is None:
        return (python, "-m", "pytest", "-q")
    folder, files = tests
    texts = [_read(path) for path in files]
    if any("pytest" in text for text in texts) or not any("unittest" in text for text in texts):
        return (python, "-m", "pytest", "-q")
    if folder == root:
        return (python, "-m", "unittest")
    return (python, "-m", "unittest", "discover", "-s", folder.name)


def detect_test_command(root: Path) -> tuple[str, ...] | None:
    """The command that runs ``root``'s tests, as far as its files tell: a Makefile's ``test``
    target, ``npm test``, ``cargo test``, ``go test ./...``, pytest or unittest; None: none
    found."""
    if _MAKE_TEST.search(_read(root / "Makefile")):
        return ("make", "test")
    if _npm_test(root):
        return ("npm", "test")
    if (root / "Cargo.toml").is_file():
        return ("cargo", "test")
    if (root / "go.mod").is_file():
        return ("go", "test", "./...")
    return _python_test_command(root)


def _validate_lines(validate: tuple[str, ...] | None) -> str:
    if validate is None:
        return """\
# The final check; the run completes only when it exits 0. No test command was found here
# (Makefile test target, npm test, cargo test, go test, pytest, unittest): set it to yours.
# validate = ["pytest", "-q"]"""
    return f"""\
# The final check, found in this repository; the run completes only when it exits 0.
validate = {json.dumps(list(validate))}"""


def _gate_lines(test: tuple[str, ...] | None) -> str:
    """A commented ``[[gates]]`` table running ``test`` (None: a placeholder to replace).
    Commented, because a gate's program is looked up before a run starts: a fresh ``ralph
    init`` must never write a file that refuses to run where the program is missing."""
    if test is None:
        intro = "# Uncomment with your test command as argv to run it after each developer task;"
        argv = '["pytest", "-q"]'
    else:
        intro = "# Uncomment to run the test command found here after each developer task;"
        argv = json.dumps(list(test))
    return f"""\
# Gates (docs/architecture/gates.md); a [[gates]] table also turns on the tamper screen.
{intro}
# a failure keeps the work out of every commit and shows the developer its output.
# [[gates]]
# name = "tests"
# argv = {argv}
# on = ["iteration"]            # or final, completion, commit (validate already runs at the end)
# on_failure = "block"          # block | warn | stop
# timeout_s = 600"""


_LOOP_LINES = """\
enforce_hat_scope = false       # true: a hat's out-of-scope topics are reported, never acted on
completion_promise = "LOOP_COMPLETE"
# cancellation_promise = "loop.cancel"   # an agent publishing it ends the run (exit 0)
required_events = []            # topics that must be seen before completion is accepted
stale_repeats = 3               # the same topic, hat and payload N times in a row: loop_stale
max_task_blocks = 3             # build.blocked N times for one task: the task is abandoned
max_abandoned_tasks = 3         # N abandoned tasks: loop_thrashing
human_timeout_s = 600           # how long an agent's human.interact question waits
max_formatting_retries = 2      # correction turns after a malformed structured response
""".splitlines()
"""The starter's ``[loop]`` lines, by the key each sets; a workflow's own keys replace them."""

_REVIEW_LINES = """\
# A completion claim (an agent publishing LOOP_COMPLETE, as every developer prompt asks) is
# reviewed before the final check: review passes ([budgets] max_review_passes), then validate.
# false: a claim goes straight to the final check; max_review_passes = 0 turns review off.
review_completion = true"""
"""The built-in pipeline's review of a completion claim (a topology's hats review as their
triggers say)."""

_ROLE_HATS = """\
# A hat per role (planner, developer, reviewer, committer, fixer), all keys optional:
#   [hats.developer]
#   name = "builder"
#   publishes = ["build.**", "task.**", "human.interact"]
#   instructions = "Write the failing test first."
#   model = "sonnet"
#   args = ["--max-turns", "50"]
#   response_schema = "agent-response"   # answer in .agent/out/response.json (or a schema file)
"""


def _iterations_line(workflow: Preset | None) -> str:
    if workflow is None or workflow.max_iterations is None:
        return "max_iterations = 5              # development iterations"
    return (
        f"max_iterations = {workflow.max_iterations}"
        f"  # activations of hats; about what a run of {workflow.name} needs"
    )


def _workflow_lines(workflow: Preset | None) -> str:
    """The starter's ``[loop]`` table and its hats: the built-in pipeline's, or
    ``workflow``'s keys and hats with the other guards as the built-in pipeline has them."""
    own = workflow.workflow() if workflow is not None else {}
    loop = own.get("loop", {})
    lines = ["# Loop control: see docs/architecture/loop-control.md.", "[loop]"]
    if workflow is not None and loop:
        lines.append(f"# The workflow of the preset {workflow.name}: {workflow.description}")
        lines.append(f"# (`ralph presets show {workflow.name}` draws it)")
        lines.append(dump_toml(loop).rstrip())
        lines.append("# Guards:")
    lines += [line for line in _LOOP_LINES if line.lstrip("# ").split(" ")[0] not in loop]
    hats = own.get("hats")
    if not hats and "review_completion" not in loop:
        lines.append(_REVIEW_LINES)
    if workflow is None or not hats:
        return "\n".join(lines) + "\n\n" + _ROLE_HATS
    intro = (
        f"# The {workflow.name} workflow's hats; each wakes on the topics in its triggers.\n"
        "# Edit them or add hats of your own: docs/architecture/topologies.md.\n"
    )
    return "\n".join(lines) + "\n\n" + intro + dump_toml({"hats": hats})


def installed_presets() -> list[str]:
    """The built-in presets whose program is on ``PATH``, in preset order."""
    return [name for name, preset in PRESETS.items() if shutil.which(preset.argv[0])]


def looked_for() -> list[str]:
    """The programs of the built-in presets, which ``ralph init`` looks for on ``PATH``."""
    return [preset.argv[0] for preset in PRESETS.values()]


EXAMPLE_AGENT: Final = Path(__file__).resolve().parents[1] / "agents" / "example.sh"
"""The example agent that ships with ralph: a shell script that hands each prompt to a
program of your own and writes the report its role owes (docs/your-own-agent.md)."""


def _agent_lines(installed: list[str]) -> str:
    """The ``[agents]`` tables and the default chain: every installed preset, or, with none,
    an example to uncomment (an agent of your own) and an empty chain."""
    if installed:
        blocks = "\n".join(f'[agents.{name}]\npreset = "{name}"\n' for name in installed)
        chain = ", ".join(f'"{name}"' for name in installed)
        return f"{blocks}\n[chains]\n{_CHAINS_INTRO}default = [{chain}]"
    example = json.dumps(["sh", str(EXAMPLE_AGENT), "my-tool", "--its-flag"])
    return f"""\
# No agent CLI was found on PATH (looked for {", ".join(looked_for())}).
# Install one and add it here ([agents.NAME] preset = "NAME", NAME one of those), or run a
# program of your own as the agent (docs/your-own-agent.md): the example that ships with
# ralph hands each prompt to your command and writes the report ralph reads.
# [agents.mine]
# command = {example}

[chains]
{_CHAINS_INTRO}default = []                    # the agents, e.g. ["mine"]"""


_CHAINS_INTRO = """\
# The agents each role falls back through, preferred first; `default` serves every role
# without a chain of its own (planner, developer, reviewer, committer, fixer).
"""


def starter_config(
    installed: list[str], validate: tuple[str, ...] | None = None, workflow: Preset | None = None
) -> str:
    """The text of a starter ``ralph.toml``: every installed agent configured, in the default
    chain (none installed: an agent of your own to uncomment, and no chain yet),
    ``validate`` as the final check (None: left for the user to set) and, commented, as a
    gate after each task, ``workflow``'s loop and hats (None: the built-in pipeline's), and
    every key shown with its default."""
    return f"""\
# ralph.toml: how `ralph run` drives agents in this repository.
# Every key is optional; the values shown are the defaults unless marked otherwise.

# The task, read at the start of each run (or give --prompt / --prompt-file).
prompt_file = "PROMPT.md"

# The branch to work on, switched to (and created when missing) at run and resume.
# branch = "ralph/work"

# Rebase the branch onto this one after each commit (unset: never rebase).
# rebase_onto = "main"

{_validate_lines(validate)}

{_gate_lines(validate)}

# Agents, gates and validate run in a sandbox where bubblewrap works (docs/architecture/
# sandbox.md): the workspace writable, your secrets and ralph's files out of reach, the network
# limited to each agent's model endpoint. Every run says whether it is on, and why not.
[sandbox]
mode = "auto"                   # auto | required (refuse to run without it) | off
# allow = ["pkgs.example:443"]  # more host:port pairs agents may reach
# Agents get a documented set of variables and their CLI's own; every run names the others it
# withholds (names only). Pass more by name or pattern:
# pass_env = ["MY_SERVICE_URL", "AWS_*"]

# The workspace's memories and tasks (docs/architecture/context.md): agents keep them with
# `ralph memory add` and `ralph task add|start|done|block`, and so can you.
[context]
memory_chars = 4000             # the most characters of memories a prompt carries
finish_tasks = false            # true: completion waits until every task is done

# Your scripts at points of a run (docs/architecture/hooks.md), any number of:
#   [[hooks]]
#   name = "no-keys"
#   point = "before_commit"     # or run_start, before_invocation, after_invocation,
#                               # completion_claimed, on_failure, run_end, question_asked,
#                               # limit_wait
#   command = ["scripts/no-keys.sh"]   # gets the run's news as JSON on stdin
#   on_error = "block"          # warn | block (the step does not happen) | suspend (resumably)
# A command told when a run ends, asks you something or waits on a usage limit:
#   [notify]
#   command = ["notify-send", "ralph"]

[budgets]
{_iterations_line(workflow)}
max_review_passes = 2
max_retries_per_agent = 2       # retries of one agent before falling back to the next
backoff_base_ms = 1000          # the backoff window doubles per retry from here ...
backoff_cap_ms = 60000          # ... up to this
max_consecutive_failures = 3    # failed iterations in a row before the run stops
max_consecutive_malformed = 3
# max_runtime_s = 7200          # wall-clock budget of one `ralph run` / `ralph resume`

# Agents: a built-in preset ({", ".join(PRESETS)}) or any program:
#   [agents.mine]
#   command = ["my-agent", "--headless"]
#   prompt_via = "stdin"        # stdin, argument or file
# Optional per agent: model = "...", args = [...], timeout_s = 3600, inactivity_timeout_s = 600

{_agent_lines(installed)}

{_workflow_lines(workflow)}"""


def write_starter(
    root: Path, workflow: Preset | None = None, *, force: bool = False
) -> tuple[Path, tuple[str, ...] | None]:
    """Write ``ralph.toml`` in ``root`` (with ``workflow``'s loop and hats); its path and the
    test command it validates with. Raises FileExistsError when there is one (unless
    ``force``: it is replaced), and ConfigError (writing nothing) if the text would not
    parse."""
    path = root / "ralph.toml"
    validate = detect_test_command(root)
    text = starter_config(installed_presets(), validate, workflow)
    parse_config(text, str(path))  # never a file `ralph run` would refuse
    with path.open("w" if force else "x", encoding="utf-8") as handle:
        handle.write(text)
    return path, validate
