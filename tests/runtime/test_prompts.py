"""Prompts: rendered from package templates, delivered to the agent byte for byte."""

from __future__ import annotations

import os
import random
from pathlib import Path

import pytest

from pipeline.core.state import Phase
from pipeline.events import PromptKind
from pipeline.handlers.runtime import render_prompt, template_text
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
    """Each template exists in package data and tells the agent where to report (a topology
    hat reports by the topics it publishes: its prompt names none); every one but the
    formatting correction's carries the user's task (a correction must not)."""
    for kind in PromptKind:
        text = template_text(kind)
        assert ("$out_dir/" in text) is (kind is not PromptKind.HAT), kind
        assert ("$user_prompt" in text) is (kind is not PromptKind.FORMAT_CORRECTION), kind


def test_the_correction_template_holds_the_response_the_violations_and_the_directive() -> None:
    """Its three required parts (and the schema), and nothing of the earlier prompt."""
    text = template_text(PromptKind.FORMAT_CORRECTION)
    assert "$raw_response" in text
    assert "$violations" in text
    assert "$schema" in text
    assert (
        "Return ONLY a valid JSON object conforming to the schema. "
        "Do not include markdown fences or prose." in text
    )
    assert not {"$plan", "$issues", "$last_error", "$user_prompt"} & set(text.split())


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


def test_a_prompt_too_long_for_an_argument_is_refused_clearly(tmp_path: Path) -> None:
    """Over 100 KB by argument: a non-retriable failure that says to use a file instead."""
    from pipeline.events import ErrorKind, InvocationFailed
    from tests.runtime.workspace import events_of

    root = make_workspace(
        tmp_path / "ws",
        scripts={"s.toml": FINISH_EVERYTHING},
        agents={"arg": [PYTHON, "-c", RECORD_ARGV], "main": scripted("s.toml")},
        chains='default = ["arg", "main"]',
        prompt=nasty_prompt(120_000),
    )
    config = root / "ralph.toml"
    config.write_text(
        config.read_text().replace("[agents.arg]\n", '[agents.arg]\nprompt_via = "argument"\n')
    )
    result = run_here(root)
    failed = next(e for e in events_of(root, result) if isinstance(e, InvocationFailed))
    assert (failed.agent, failed.error, failed.retriable) == ("arg", ErrorKind.OTHER, False)
    assert 'prompt_via = "file"' in failed.message
    assert result.state.phase is Phase.COMPLETE  # the next agent of the chain took over


def test_agents_get_the_run_environment_with_ralph_on_path(tmp_path: Path) -> None:
    """RALPH_EVENTS_FILE (this run's file, under .ralph/), RALPH_WORKSPACE_ROOT, RALPH_BIN
    (an executable ralph, whose folder leads PATH), PWD the workspace (whatever this
    process's PWD: OpenCode takes its project folder from it) and the task's coordinates."""
    import json

    from tests.runtime.workspace import events_of

    record = (
        "import json, os, pathlib; out = pathlib.Path('.agent/out'); "
        "out.mkdir(parents=True, exist_ok=True); "
        "keep = {k: v for k, v in os.environ.items() if k.startswith('RALPH_') or k in "
        "('PATH', 'PWD')}; "
        "kind = os.environ['RALPH_PROMPT_KIND']; "
        "pathlib.Path('.agent/env-' + kind).write_text(json.dumps(keep)); "
        "[pathlib.Path(out, n).write_text(t) for n, t in [('plan.md', 'p'), "
        "('status', 'completed'), ('issues.md', ''), ('commit-message', 'm')]]"
    )
    root = make_workspace(tmp_path / "ws", scripts={}, agents={"main": [PYTHON, "-c", record]})
    result = run_here(root)
    env = json.loads((root / ".agent" / "env-development").read_text())
    events_file = Path(env["RALPH_EVENTS_FILE"])
    assert events_file == root.resolve() / ".ralph" / f"events-{result.run_id}.jsonl"
    assert events_file.exists()
    assert Path(env["RALPH_WORKSPACE_ROOT"]) == root.resolve()
    assert Path(env["PWD"]).resolve() == root.resolve()
    assert Path(os.environ.get("PWD", "/")).resolve() != root.resolve()
    ralph_bin = Path(env["RALPH_BIN"])
    assert ralph_bin.name == "ralph"
    assert env["PATH"].split(":")[0] == str(ralph_bin.parent)
    assert (env["RALPH_ROLE"], env["RALPH_ITERATION"], env["RALPH_ATTEMPT"]) == (
        "developer",
        "1",
        "1",
    )
    assert env["RALPH_RUN_ID"] == result.run_id
    assert len(events_of(root, result)) == result.state.sequence


PUBLISH_AND_FINISH = FINISH_EVERYTHING.replace(
    "[[default]]", '[[development]]\nemit = [["build.done", "ok"]]'
)


def test_working_prompts_tell_the_agent_how_to_publish_and_what_is_still_missing(
    tmp_path: Path,
) -> None:
    """Every working prompt names ``"$RALPH_BIN" emit``, the hat's topics and the completion
    promise with the required events not yet published (so a second development prompt no
    longer lists what the first published); a commit message's prompt says none of it."""
    root = make_workspace(
        tmp_path / "ws",
        scripts={"s.toml": PUBLISH_AND_FINISH + FINISH_EVERYTHING},
        agents={"main": scripted("s.toml")},
        extra=(
            '[loop]\nrequired_events = ["build.done", "review.clean"]\nenforce_hat_scope = true\n'
            '[hats.developer]\npublishes = ["build.*"]\n'
        ),
    )
    run_here(root)
    prompts = root / ".agent" / "prompts"
    development = (prompts / "development.md").read_text()
    assert '"$RALPH_BIN" emit TOPIC' in development
    assert "Your hat publishes: `build.*`. ralph ignores any other topic." in development
    assert "publish `LOOP_COMPLETE`" in development
    assert "`review.clean`" in development
    assert "ask a person" in development
    planning = (prompts / "planning.md").read_text()
    assert "`build.done`, `review.clean`" in planning
    review = (prompts / "review.md").read_text()
    assert "only once these topics have been published: `review.clean`." in review
    assert "RALPH_BIN" not in (prompts / "commit_message.md").read_text()
