"""Prompts: rendered from package templates, delivered to the agent byte for byte."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from pipeline.events import PromptKind
from pipeline.handlers.runtime import render_prompt, template_text
from pipeline.state import Phase
from tests.runtime.workspace import FINISH_EVERYTHING, PYTHON, make_workspace, run_here, scripted


def nasty_prompt(size: int) -> str:
    """Shell metacharacters, quotes, backslashes, ``$`` templates and unicode, ``size`` long."""
    head = (
        "Fix it; rm -rf / && echo $HOME `id` $(whoami) | tee >out 2>&1 & 'single' "
        '"double" \\n \\\\ ${user_prompt} $$ %s {} é ✓\n'
    )
    rng = random.Random(7)
    filler = "".join(rng.choice("abc $'\"\\;|&<>`(){}*?!#~\n\t") for _ in range(size))
    return (head + filler)[:size] + "\nEND\n"


SAVE_STDIN = FINISH_EVERYTHING.replace("[[default]]", '[[planning]]\nsave_prompt = ".agent/got"')


def test_a_100_kb_prompt_with_metacharacters_reaches_the_agent_on_stdin(
    tmp_path: Path,
) -> None:
    """What the agent reads on stdin is exactly the rendered prompt file, which holds the
    user's prompt verbatim (no shell, no template expansion of the user's ``$``)."""
    prompt = nasty_prompt(100_000)
    root = make_workspace(
        tmp_path / "ws",
        scripts={"s.toml": SAVE_STDIN + FINISH_EVERYTHING},
        agents={"main": scripted("s.toml")},
        prompt=prompt,
    )
    result = run_here(root)
    assert result.state.phase is Phase.COMPLETE
    got = (root / ".agent" / "got").read_bytes()
    assert got == (root / ".agent" / "prompts" / "planning.md").read_bytes()
    assert prompt.strip().encode() in got


RECORD_ARGV = (
    "import sys, os, pathlib; out = pathlib.Path('.agent/out'); "
    "out.mkdir(parents=True, exist_ok=True); "
    "kind = os.environ['RALPH_PROMPT_KIND']; "
    "pathlib.Path('.agent', 'argv-' + kind).write_bytes(os.fsencode(sys.argv[1])); "
    "[pathlib.Path(out, n).write_text(t) for n, t in [('plan.md', 'p'), ('status', 'completed'), "
    "('issues.md', ''), ('commit-message', 'm')]]"
)


@pytest.mark.parametrize(("via", "size"), [("argument", 20_000), ("file", 100_000)])
def test_a_prompt_by_argument_or_by_file_arrives_byte_for_byte(
    tmp_path: Path, via: str, size: int
) -> None:
    """As one argv element (never through a shell), or as the path of the rendered file."""
    prompt = nasty_prompt(size)
    root = make_workspace(
        tmp_path / "ws",
        scripts={},
        agents={"main": [PYTHON, "-c", RECORD_ARGV]},
        prompt=prompt,
        agent_options=f'prompt_via = "{via}"\ntimeout_s = 60',
    )
    result = run_here(root)
    assert result.state.phase is Phase.COMPLETE
    received = (root / ".agent" / "argv-planning").read_bytes()
    rendered = (root / ".agent" / "prompts" / "planning.md").read_bytes()
    if via == "argument":
        assert received == rendered
    else:
        assert Path(received.decode()).read_bytes() == rendered
    assert prompt.strip().encode() in rendered


def test_every_prompt_kind_has_a_template_naming_its_report_file() -> None:
    """Each template exists in package data and tells the agent where to report."""
    for kind in PromptKind:
        text = template_text(kind)
        assert "$out_dir/" in text, kind
        assert "$user_prompt" in text, kind


def test_rendering_fills_values_without_expanding_them() -> None:
    """A value holding ``$plan`` stays as it is; unknown ``$`` words in templates stay too."""
    values = {
        "user_prompt": "cost: $5 and $plan",
        "plan": "THE PLAN",
        "issues": "",
        "last_error": "(none)",
        "iteration": "2",
        "review_pass": "0",
        "out_dir": ".agent/out",
    }
    text = render_prompt(PromptKind.DEVELOPMENT, values)
    assert "cost: $5 and $plan" in text
    assert "THE PLAN" in text
    assert "iteration 2" in text
    assert ".agent/out/status" in text
