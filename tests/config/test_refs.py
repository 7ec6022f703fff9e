"""``rebase_onto`` and ``branch`` reach git's command line: only ref names are accepted."""

from __future__ import annotations

import json

import pytest

from pipeline.core.config import ConfigError, parse_config


@pytest.mark.parametrize("value", ["main", "origin/main", "ralph/task-42", "v1.2", "release_3"])
@pytest.mark.parametrize("key", ["rebase_onto", "branch"])
def test_a_ref_name_is_accepted(key: str, value: str) -> None:
    """Branch names as people write them pass unchanged."""
    assert getattr(parse_config(f'{key} = "{value}"', "ralph.toml"), key) == value


@pytest.mark.parametrize(
    "value",
    [
        "--exec=touch /tmp/x",
        "-x",
        "",
        "a..b",
        "HEAD~1",
        "main^",
        "a b",
        "x:y",
        "we*rd",
        "end/",
        ".hidden",
        "a/.b",
        "x.lock",
        "@",
        "a@{1}",
        "nul\u0000byte",
        "back\\slash",
    ],
)
@pytest.mark.parametrize("key", ["rebase_onto", "branch"])
def test_a_value_that_is_not_a_ref_name_is_refused_naming_the_key(key: str, value: str) -> None:
    """An option-like or malformed value is a one-line ConfigError naming the file and key."""
    text = f"{key} = {json.dumps(value)}"  # a JSON string is a TOML basic string
    with pytest.raises(ConfigError, match=rf"^ralph\.toml: {key}: ") as refused:
        parse_config(text, "ralph.toml")
    assert "\n" not in str(refused.value)
