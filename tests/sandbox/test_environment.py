"""The environment a sandboxed process gets (section 7): the documented set, ``pass_env``, the
agent's own ``env``, ``TMPDIR``; ralph's credentials never, other secrets only when named."""

from __future__ import annotations

from fnmatch import fnmatchcase

from hypothesis import given
from hypothesis import strategies as st

from pipeline.core.agents import PRESETS
from pipeline.core.sandbox import (
    DOCUMENTED_VARIABLES,
    RALPH_ONLY_VARIABLES,
    SECRET_VARIABLES,
    EnvironmentRules,
    sandbox_environment,
    withheld_variables,
)

SANDBOX_PRESETS = {name: preset.sandbox for name, preset in PRESETS.items()}

PERSON = {
    "PATH": "/usr/bin:/bin",
    "HOME": "/home/u",
    "LANG": "C.UTF-8",
    "LC_ALL": "C.UTF-8",
    "PWD": "/home/u/w",
    "XDG_CONFIG_HOME": "/home/u/.config",
    "XDG_RUNTIME_DIR": "/run/user/1000",
    "GIT_AUTHOR_NAME": "A. Person",
    "RALPH_RUN_ID": "run-1",
    "RALPH_EVENTS_FILE": "/home/u/w/.ralph/events-run-1.jsonl",
    "RALPH_STORE": "postgresql://ralph:pw@db/ralph",
    "PGPASSWORD": "pw",
    "ANTHROPIC_API_KEY": "sk-ant-xxxxxxxxxxxxxxxxxxxx",
    "AWS_SECRET_ACCESS_KEY": "aws-secret",
    "GITHUB_TOKEN": "ghp_xxx",
    "SSH_AUTH_SOCK": "/run/user/1000/ssh",
    "TMPDIR": "/home/u/tmp",
    "SANDBOX_CANARY": "canary",
}


def test_a_command_agent_gets_the_documented_set_only() -> None:
    """No ``pass_env``: the documented variables, the run's ``RALPH_*`` and ``TMPDIR=/tmp``;
    ralph's store, libpq's password, every key and token and the rest stay out."""
    env = sandbox_environment(PERSON, EnvironmentRules())
    assert env == {
        "PATH": "/usr/bin:/bin",
        "HOME": "/home/u",
        "LANG": "C.UTF-8",
        "LC_ALL": "C.UTF-8",
        "PWD": "/home/u/w",
        "XDG_CONFIG_HOME": "/home/u/.config",
        "GIT_AUTHOR_NAME": "A. Person",
        "RALPH_RUN_ID": "run-1",
        "RALPH_EVENTS_FILE": "/home/u/w/.ralph/events-run-1.jsonl",
        "TMPDIR": "/tmp",
    }
    assert withheld_variables(PERSON, EnvironmentRules()) == (
        "ANTHROPIC_API_KEY",
        "AWS_SECRET_ACCESS_KEY",
        "GITHUB_TOKEN",
        "PGPASSWORD",
        "RALPH_STORE",
        "SANDBOX_CANARY",
        "SSH_AUTH_SOCK",
        "XDG_RUNTIME_DIR",
    )


def test_the_claude_preset_passes_its_key() -> None:
    """The preset's ``ANTHROPIC_*`` names the key Claude Code needs; nothing else changes."""
    rules = EnvironmentRules(pass_env=SANDBOX_PRESETS["claude"].pass_env)
    env = sandbox_environment(PERSON, rules)
    assert env["ANTHROPIC_API_KEY"] == PERSON["ANTHROPIC_API_KEY"]
    assert "GITHUB_TOKEN" not in env
    assert "ANTHROPIC_API_KEY" not in withheld_variables(PERSON, rules)


def test_no_pattern_lets_ralphs_credentials_through() -> None:
    """Even ``*`` keeps ``RALPH_STORE`` and ``PG*`` out."""
    env = sandbox_environment(PERSON, EnvironmentRules(pass_env=("*",)))
    assert "RALPH_STORE" not in env
    assert "PGPASSWORD" not in env
    assert env["GITHUB_TOKEN"] == "ghp_xxx"


def test_the_agents_env_is_set_as_given_and_tmpdir_is_always_tmp() -> None:
    """``set_env`` is what the person wrote for this agent: set, even a database of its own
    (``PGHOST``); ``TMPDIR`` stays ``/tmp`` whatever it says (under ``$HOME`` it is hidden)."""
    rules = EnvironmentRules(set_env={"PGHOST": "agentdb", "IS_SANDBOX": "1", "TMPDIR": "/x"})
    env = sandbox_environment(PERSON, rules)
    assert (env["PGHOST"], env["IS_SANDBOX"], env["TMPDIR"]) == ("agentdb", "1", "/tmp")
    assert "PGHOST" not in withheld_variables({"PGHOST": "h"}, rules)


def test_a_secret_name_in_the_documented_patterns_stays_out() -> None:
    """``GIT_AUTHOR_*`` and ``LC_*`` are for names and locales: a token that happens to match
    them passes only when ``pass_env`` names it."""
    environ = {"GIT_AUTHOR_TOKEN": "t", "LC_API_KEY": "k", "RALPH_API_KEY": "r"}
    assert sandbox_environment(environ, EnvironmentRules()) == {"TMPDIR": "/tmp"}
    env = sandbox_environment(environ, EnvironmentRules(pass_env=("LC_API_KEY",)))
    assert env == {"LC_API_KEY": "k", "TMPDIR": "/tmp"}


def test_the_rules_compare_by_value_and_cannot_be_changed() -> None:
    """Rules are a value: equal when equal, the variables copied in and read-only."""
    given_env = {"A": "1"}
    rules = EnvironmentRules(set_env=given_env)
    given_env["A"] = "2"
    assert rules == EnvironmentRules(set_env={"A": "1"})
    assert rules.set_env["A"] == "1"


_NAMES = st.sampled_from(
    [
        *PERSON,
        "PGHOST",
        "PGPASSFILE",
        "OPENAI_API_KEY",
        "OPENAI_BASE_URL",
        "DB_PASSWORD",
        "npm_config_token",
        "my_secret",
        "GIT_COMMITTER_EMAIL",
        "TERM",
        "EDITOR",
        "CODEX_HOME",
    ]
) | st.text("ABCDEFGHIJKLMNOPQRSTUVWXYZ_", min_size=1, max_size=12)
_VALUES = st.text(max_size=20)
_PATTERNS = st.sampled_from(["*", "PG*", "RALPH_*", "OPENAI_*", "*_KEY", "EDITOR", "[A-M]*"])


def _credential(name: str) -> bool:
    """A name the project's own lists call a credential."""
    return any(fnmatchcase(name, p) for p in RALPH_ONLY_VARIABLES) or any(
        fnmatchcase(name.upper(), p) for p in SECRET_VARIABLES
    )


@given(
    st.dictionaries(_NAMES, _VALUES, max_size=12),
    st.lists(_PATTERNS, max_size=3),
    st.dictionaries(_NAMES, _VALUES, max_size=3),
)
def test_the_filter_keeps_its_promises(
    environ: dict[str, str], patterns: list[str], set_env: dict[str, str]
) -> None:
    """For any environment and rules: ralph's own credentials never pass from the environment;
    any other credential passes only when a ``pass_env`` pattern names it; every other
    documented or named variable passes, unchanged; ``set_env`` and ``TMPDIR`` are set; every
    variable of the environment is either passed or named as withheld, never both."""
    rules = EnvironmentRules(pass_env=tuple(patterns), set_env=set_env)
    env = sandbox_environment(environ, rules)
    withheld = set(withheld_variables(environ, rules))
    for name, value in environ.items():
        if name in set_env or name == "TMPDIR":
            continue
        named = any(fnmatchcase(name, p) for p in patterns)
        documented = any(fnmatchcase(name, p) for p in DOCUMENTED_VARIABLES)
        ralphs = any(fnmatchcase(name, p) for p in RALPH_ONLY_VARIABLES)
        if ralphs or (_credential(name) and not named):
            assert name not in env, name
        elif named or documented:
            assert name in env, name
        if name in env:
            assert env[name] == value
        assert (name in env) != (name in withheld), name
    for name, value in set_env.items():
        if name != "TMPDIR":
            assert env[name] == value
    assert env["TMPDIR"] == "/tmp"
    assert set(env) <= {*environ, *set_env, "TMPDIR"}
