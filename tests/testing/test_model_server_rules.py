"""Rules files: a script written as data matches requests by their conditions, first rule
first, and a file that does not fit the format is one error naming the file and each field."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.model_server import (
    Api,
    ModelRequest,
    ScriptFileError,
    Shell,
    WriteFile,
    load_rules,
)

RULES = """
[[rules]]
kind = "development"
turn = 0
[rules.reply]
actions = [{ write_file = { path = "app.py", content = "x = 1\\n" } }]
usage = { input_tokens = 5 }

[[rules]]
kind = "development"
[rules.reply]
actions = [{ shell = "ls" }]

[default]
text = "nothing to do"
"""


def _request(prompt: str, turn: int) -> ModelRequest:
    return ModelRequest(
        api=Api.ANTHROPIC, model="m", prompt=prompt, turn=turn, last_tool_result=None, tools=()
    )


def test_the_first_matching_rule_answers_and_the_default_answers_the_rest(
    tmp_path: Path,
) -> None:
    """Turn 0 of a development prompt writes the file, a later turn runs the shell, and a
    prompt no rule names gets the default."""
    path = tmp_path / "rules.toml"
    path.write_text(RULES)
    script = load_rules(path)
    first = script(_request("# Role: developer — iteration 1\n", 0))
    assert first.actions == (WriteFile(path="app.py", content="x = 1\n"),)
    assert first.usage.input_tokens == 5
    assert script(_request("# Role: developer — iteration 1\n", 2)).actions == (Shell("ls"),)
    assert script(_request("# Role: planner\n", 0)).text == "nothing to do"


def test_a_bad_rules_file_names_the_file_and_every_bad_field(tmp_path: Path) -> None:
    """A turn given as text (never coerced) and an action naming two things: both named,
    with their paths, in one error."""
    path = tmp_path / "bad.toml"
    two_things = '[{ shell = "ls", tool = { name = "a" } }]'
    path.write_text(f'[[rules]]\nturn = "3"\n[rules.reply]\nactions = {two_things}\n')
    with pytest.raises(ScriptFileError) as caught:
        load_rules(path)
    message = str(caught.value)
    assert str(path) in message
    assert "an action is exactly one of shell, write_file and tool @ $.rules[0].reply" in message
    assert "$.rules[0].turn" in message


def test_a_rules_file_that_is_not_toml_is_refused(tmp_path: Path) -> None:
    """Unreadable text is a ScriptFileError naming the file, not a traceback."""
    path = tmp_path / "broken.toml"
    path.write_text("[[rules]\n")
    with pytest.raises(ScriptFileError, match="cannot read the script"):
        load_rules(path)
