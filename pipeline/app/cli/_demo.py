"""``ralph demo``: a scratch git repository with a small task, run end to end by the scripted
agent (I/O: files, git, processes).

The script makes the run show the interesting decisions with real processes: the developer's
preferred agent is not installed (fallback), the scripted developer crashes once after writing
a malformed line to its events file (retry after backoff, with the rejected line shown in the
retry's prompt), the first iteration is partial, the first review finds an issue that a fix
attempt resolves, agents publish topics (``ralph topics`` lists them), and the final check
runs the repository's real unit tests.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from pipeline.core.agents import OUTPUT_FORMATS, UsageFigures

__all__ = ["create_demo_repository", "prepare_directory"]

_TASK = """\
# Task

Add a `slugify(text)` function to `textkit.py`: lower-case the text, turn every run of
characters that are not letters or digits into one `-`, and never start or end with `-`.
Cover it with unit tests in `test_textkit.py`.
"""

_SLUGIFY_V1 = '''\
"""Small text helpers."""

import re


def slugify(text: str) -> str:
    """``text`` as a URL slug."""
    return re.sub(r"[^a-z0-9]+", "-", text.lower())
'''

_SLUGIFY_V2 = _SLUGIFY_V1.replace(
    'return re.sub(r"[^a-z0-9]+", "-", text.lower())',
    'return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")',
)

_TESTS_V1 = """\
import unittest

from textkit import slugify


class SlugifyTest(unittest.TestCase):
    def test_words_are_joined_by_dashes(self) -> None:
        self.assertEqual(slugify("Hello World"), "hello-world")
"""

_TESTS_V2 = (
    _TESTS_V1
    + """
    def test_no_dash_at_either_end(self) -> None:
        self.assertEqual(slugify("  Hello, World!  "), "hello-world")
"""
)


def _toml(value: str) -> str:
    # JSON string escapes are valid TOML basic-string escapes.
    return json.dumps(value)


_USAGE = {
    "planning": (2_400, 310, 0.0127),
    "development": (6_800, 1_450, 0.0421),
    "commit_message": (1_900, 40, 0.0062),
    "review": (5_200, 260, 0.0195),
    "review_fix": (7_100, 980, 0.0364),
}
"""Tokens in and out and the cost each kind of invocation reports, as a real CLI would."""

_FORMAT, _REPORT = next((f.name, f.report) for f in OUTPUT_FORMATS.values() if f.report)
"""The output format the demo's agent reports its usage in, so the run shows tokens and cost
(the first CLI's that declares how it prints them), and how it prints them."""


def _usage_lines(kind: str) -> str:
    tokens_in, tokens_out, cost = _USAGE[kind]
    figures = UsageFigures(
        model="demo-model",
        input_tokens=tokens_in,
        output_tokens=tokens_out,
        turns=3,
        session_id=kind,
        api_duration_ms=1_800,
        cost_usd=cost,
    )
    return _REPORT(figures)


def _step(kind: str, **fields: str | int) -> str:
    said = str(fields.pop("print", ""))
    fields = {"print": (said + "\n" if said else "") + _usage_lines(kind), **fields}
    lines = [f"[[{kind}]]"]
    for key, value in fields.items():
        lines.append(f"{key} = {_toml(value) if isinstance(value, str) else value}")
    return "\n".join(lines) + "\n"


def _writes(kind: str, files: dict[str, str], **fields: str | int) -> str:
    table = ", ".join(f"{_toml(path)} = {_toml(text)}" for path, text in files.items())
    return _step(kind, **fields) + f"write = {{ {table} }}\n"


def _script() -> str:
    out = ".agent/out/"
    return "\n".join(
        [
            _writes(
                "planning",
                {out + "plan.md": "1. Add slugify() to textkit.py.\n2. Add unit tests.\n"},
                print="Read the task; wrote a two-step plan.",
            )
            + 'emit = [["plan.ready", "2 steps"]]\n',
            _step("development", print="Simulated crash: the agent process died.", exit=1)
            + 'raw_lines = ["{\\"topic\\": \\"build.progress\\", half a line"]\n',
            _writes(
                "development",
                {
                    "textkit.py": _SLUGIFY_V1,
                    out + "status": "partial\nAdded slugify(); tests come next.",
                },
                print="Step 1 of the plan done.",
            )
            + 'emit = [["build.progress", "slugify() added"]]\n',
            _writes(
                "development",
                {"test_textkit.py": _TESTS_V1, out + "status": "completed\nAdded unit tests."},
                print="Step 2 of the plan done.",
            )
            # Too early: the review has not passed yet, so the completion gate refuses it.
            + 'emit = [["LOOP_COMPLETE", "all steps done"]]\n',
            _writes("commit_message", {out + "commit-message": "Add slugify()"}),
            _writes("commit_message", {out + "commit-message": "Test slugify()"}),
            _writes(
                "commit_message",
                {out + "commit-message": "Trim dashes at both ends of a slug"},
            ),
            _writes(
                "review",
                {
                    out + "issues.md": "- textkit.py: slugify('  Hello, World!  ') gives "
                    "'-hello-world-'; the task says a slug never starts or ends with '-'.\n"
                },
                print="Found one issue.",
            )
            # Not the reviewer's topic: with hat scope enforced it is reported, never acted on.
            + 'emit = [["build.done", "marking the build done myself"]]\n',
            _writes("review", {out + "issues.md": "No issues found.\n"}, print="All good.")
            + 'emit = [["review.clean", "pass 2"]]\n',
            _writes(
                "review_fix",
                {
                    "textkit.py": _SLUGIFY_V2,
                    "test_textkit.py": _TESTS_V2,
                    out + "status": "completed\nStripped dashes at both ends; added a test.",
                },
                print="Fixed the review's issue.",
            )
            + 'emit = [["review.fixed", "1 issue"]]\n',
        ]
    )


def _config(python: str) -> str:
    scripted = [python, "-m", "pipeline.app.agents.scripted", ".ralph/scripted-agent.toml"]
    return f"""\
# The demo's configuration: the scripted agent plays every role.
prompt_file = "PROMPT.md"
validate = {json.dumps([python, "-B", "-m", "unittest", "-q"])}

[budgets]
max_iterations = 4
max_review_passes = 2
max_retries_per_agent = 2
backoff_base_ms = 100
backoff_cap_ms = 400

[agents.scripted]
command = {json.dumps(scripted)}
output_format = {json.dumps(_FORMAT)}   # it prints its usage as that CLI does
timeout_s = 120
inactivity_timeout_s = 60

# Not installed anywhere: the developer's chain falls back from it to the scripted agent.
[agents.absent]
command = ["ralph-demo-agent-that-is-not-installed"]

[chains]
default = ["scripted"]

# The developer's hat: its own chain, the topics it may publish, words for its prompts.
[hats.developer]
name = "builder"
publishes = ["build.**", "review.fixed", "task.**", "human.interact"]
instructions = "Keep each change small; the unit tests are the final check."
chain = ["absent", "scripted"]

[loop]
enforce_hat_scope = true                # out-of-scope topics are reported, never acted on
required_events = ["review.clean"]      # LOOP_COMPLETE is refused until a review came back clean
cancellation_promise = "loop.cancel"
"""


def prepare_directory(directory: Path) -> None:
    """Create ``directory``, refusing one that exists and is not empty."""
    if directory.exists() and (not directory.is_dir() or any(directory.iterdir())):
        raise FileExistsError(f"{directory} exists and is not empty; choose another directory")
    directory.mkdir(parents=True, exist_ok=True)


def _git(root: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=root, check=True, capture_output=True)


def create_demo_repository(root: Path) -> None:
    """Fill the empty ``root`` with the demo's git repository, task, config and script."""
    _git(root, "init", "--quiet", "--initial-branch", "main")
    _git(root, "config", "user.name", "ralph demo")
    _git(root, "config", "user.email", "demo@ralph-pipeline.invalid")
    _git(root, "config", "commit.gpgsign", "false")
    (root / "PROMPT.md").write_text(_TASK, "utf-8")
    (root / "textkit.py").write_text('"""Small text helpers."""\n', "utf-8")
    (root / "ralph.toml").write_text(_config(sys.executable), "utf-8")
    (root / ".ralph").mkdir()
    (root / ".ralph" / "scripted-agent.toml").write_text(_script(), "utf-8")
    _git(root, "add", "PROMPT.md", "textkit.py", "ralph.toml")
    _git(root, "commit", "--quiet", "-m", "The task: slugify")
