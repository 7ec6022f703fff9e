"""``ralph init``: a commented starter ``ralph.toml`` for the agent CLIs installed here (I/O)."""

from __future__ import annotations

import shutil
from pathlib import Path

from pipeline.config import PRESETS

__all__ = ["installed_presets", "starter_config", "write_starter"]


def installed_presets() -> list[str]:
    """The built-in presets whose program is on ``PATH``, in preset order."""
    return [name for name, preset in PRESETS.items() if shutil.which(preset.argv[0])]


def starter_config(installed: list[str]) -> str:
    """The text of a starter ``ralph.toml``: every installed agent configured, the first one
    (else Claude Code) the default chain, and every key shown with its default."""
    agents = installed or ["claude"]
    blocks = "\n".join(f'[agents.{name}]\npreset = "{name}"\n' for name in agents)
    chain = ", ".join(f'"{name}"' for name in agents)
    note = (
        ""
        if installed
        else "# No known agent CLI was found on PATH; install one or edit [agents] below.\n"
    )
    return f"""\
# ralph.toml: how `ralph run` drives agents in this repository.
# Every key is optional; the values shown are the defaults unless marked otherwise.
{note}
# The task, read at the start of each run (or give --prompt / --prompt-file).
prompt_file = "PROMPT.md"

# The branch to work on, switched to (and created when missing) at run and resume.
# branch = "ralph/work"

# Rebase the branch onto this one after each commit (unset: never rebase).
# rebase_onto = "main"

# The final check; the run completes only when it exits 0 (empty: no check).
# validate = ["pytest", "-q"]

[budgets]
max_iterations = 5              # development iterations
max_review_passes = 2
max_retries_per_agent = 2       # retries of one agent before falling back to the next
backoff_base_ms = 1000          # the backoff window doubles per retry from here ...
backoff_cap_ms = 60000          # ... up to this
max_consecutive_failures = 3    # failed iterations in a row before the run stops
max_consecutive_malformed = 3
# max_runtime_s = 7200          # wall-clock budget of one `ralph run` / `ralph resume`

# Agents: a built-in preset (claude, codex, gemini, opencode, aider) or any program:
#   [agents.mine]
#   command = ["my-agent", "--headless"]
#   prompt_via = "stdin"        # stdin, argument or file
# Optional per agent: model = "...", args = [...], timeout_s = 3600, inactivity_timeout_s = 600
{blocks}
[chains]
# The agents each role falls back through, preferred first; `default` serves every role
# without a chain of its own (planner, developer, reviewer, committer, fixer).
default = [{chain}]

# Loop control: see docs/architecture/loop-control.md.
[loop]
enforce_hat_scope = false       # true: a hat's out-of-scope topics are reported, never acted on
completion_promise = "LOOP_COMPLETE"
# cancellation_promise = "loop.cancel"   # an agent publishing it ends the run (exit 0)
required_events = []            # topics that must be seen before completion is accepted
stale_repeats = 3               # the same topic, hat and payload N times in a row: loop_stale
max_task_blocks = 3             # build.blocked N times for one task: the task is abandoned
max_abandoned_tasks = 3         # N abandoned tasks: loop_thrashing
human_timeout_s = 600           # how long an agent's human.interact question waits
max_formatting_retries = 2      # correction turns after a malformed structured response

# A hat per role (planner, developer, reviewer, committer, fixer), all keys optional:
#   [hats.developer]
#   name = "builder"
#   publishes = ["build.**", "task.**", "human.interact"]
#   instructions = "Write the failing test first."
#   model = "sonnet"
#   args = ["--max-turns", "50"]
#   response_schema = "agent-response"   # answer in .agent/out/response.json (or a schema file)
"""


def write_starter(root: Path) -> Path:
    """Write ``ralph.toml`` in ``root``; raises FileExistsError when there is one."""
    path = root / "ralph.toml"
    with path.open("x", encoding="utf-8") as handle:
        handle.write(starter_config(installed_presets()))
    return path
