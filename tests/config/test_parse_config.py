"""``ralph.toml`` is parsed strictly: every mistake is a one-line error naming key and file."""

from __future__ import annotations

import contextlib

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pipeline.core.config import ConfigError, PromptVia, RalphConfig, parse_config
from pipeline.events import Role

GOOD = """
prompt_file = "TASK.md"
rebase_onto = "main"

[budgets]
max_iterations = 3
backoff_base_ms = 500

[agents.claude]
preset = "claude"
model = "opus"

[agents.mine]
command = ["./my-agent", "--fast"]
prompt_via = "file"

[chains]
developer = ["claude", "mine"]
reviewer = ["claude"]
"""


def test_a_valid_file_gives_frozen_config_with_defaults() -> None:
    """Given keys are read, the rest take their defaults."""
    config = parse_config(GOOD, "ralph.toml")
    assert isinstance(config, RalphConfig)
    assert config.prompt_file == "TASK.md"
    assert config.budgets.max_iterations == 3
    assert config.budgets.max_review_passes == 2
    assert config.agents["mine"].command == ("./my-agent", "--fast")
    assert config.agents["mine"].prompt_via is PromptVia.FILE
    assert config.chains.for_role(Role.DEVELOPER) == ("claude", "mine")
    assert config.chains.for_role(Role.PLANNER) == ()
    assert config.budgets.to_budget().backoff_base_ms == 500


def test_an_empty_file_is_the_default_configuration() -> None:
    """Every key has a default."""
    assert parse_config("", "ralph.toml") == RalphConfig()


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[budgets]\nmax_iteratons = 3", "ralph.toml: budgets.max_iteratons: unknown key"),
        ("colour = 'blue'", "ralph.toml: colour: unknown key"),
        ("[budgets]\nmax_iteratons = 3", "max_iteratons: unknown key (did you mean 'max_iter"),
        ("[sandbox]\npassenv = []", "sandbox.passenv: unknown key (did you mean 'pass_env'?)"),
        ("completion_promise = 'X'", "here it is [loop] completion_promise; ralph init --from"),
        ("[cli]\nbackend = 'claude'", "cli: unknown key (a ralph-orchestrator setting: ralph"),
        (
            "[hats.developer]\nbackend = 'claude'",
            'backend: unknown key (a ralph-orchestrator hat setting: here it is chain = ["AGENT"]',
        ),
        (
            "[budgets]\nmax_iterations = '3'",
            "ralph.toml: budgets.max_iterations: expected an integer, got '3'",
        ),
        (
            "[agents.a]\npreset = 'claude'\nmodel = 3",
            "ralph.toml: agents.a.model: expected a string, got 3",
        ),
        (
            "[agents.a]\npreset = 'claude'\n[chains]\ndeveloper = ['a', 'ghost']",
            "ralph.toml: chains.developer: names agent 'ghost', which is not configured",
        ),
        ("[agents.a]\npreset = 'nope'", "agents.a.preset: unknown preset 'nope'"),
        ("[agents.a]\nmodel = 'x'", "agents.a: give exactly one of preset or command"),
        (
            "[agents.a]\ncommand = ['x']\nprompt_via = 'smoke'",
            "agents.a.prompt_via: 'smoke' is not one of stdin, argument, file",
        ),
        (
            "[store]\ndurability = 'fast'",
            "ralph.toml: store.durability: 'fast' is not one of full, process",
        ),
        ("[store]\nsync = true", "ralph.toml: store.sync: unknown key"),
        (
            "[store]\nurl = 'postgresql://me:hunter2@db:5432/ralph'",
            "ralph.toml: store.url: holds a password, which every agent can read in ralph.toml",
        ),
        (
            "[store]\nurl = 'postgresql://me@db/ralph?sslmode=require&password=hunter2'",
            "ralph.toml: store.url: holds a password",
        ),
        (
            "[[hooks]]\nname = 'h'\npoint = 'nowhere'\ncommand = ['x']",
            "ralph.toml: hooks.0.point: 'nowhere' is not one of run_start, before_invocation",
        ),
        (
            "[[hooks]]\nname = 'h'\npoint = 'run_end'\ncommand = ['x']\non_error = 'panic'",
            "ralph.toml: hooks.0.on_error: 'panic' is not one of warn, block, suspend",
        ),
        (
            "[limits]\non_usage_limit = 3",
            "ralph.toml: limits.on_usage_limit: 3 is not one of wait, fallback, stop",
        ),
        ("[budgets]\nmax_iterations = 0", "budgets.max_iterations: must be from 1 to"),
        ("[budgets]\nmax_event_lines = 0", "budgets.max_event_lines: must be from 1 to 2**40"),
        (
            "[budgets]\nmax_event_line_bytes = 1099511627777",
            "budgets.max_event_line_bytes: must be from 1 to 2**40",
        ),
        ("[budgets\n", "ralph.toml: not valid TOML"),
        ("agents = 3", "ralph.toml: agents: expected a table, got an integer"),
        ("prices = 3", "ralph.toml: prices: expected a table, got an integer"),
        (
            '[agents.a]\npreset = "claude"\nenv = "x"',
            "ralph.toml: agents.a.env: expected a table, got a string",
        ),
        ("budgets = []", "ralph.toml: budgets: expected a table, got an array"),
        (
            "[agents.a]\npreset = 'claude'\n[chains]\ndeveloper = 'a'",
            "ralph.toml: chains.developer: expected an array of strings, got a string",
        ),
        ("[agents]\na = 1", "ralph.toml: agents.a: expected a table, got an integer"),
        (
            "[budgets]\nbackoff_base_ms = 10\nbackoff_cap_ms = 5",
            "backoff_cap_ms (5) is below backoff_base_ms (10)",
        ),
        (
            "[hats.developer]\npublishes = ['build..done']",
            "hats.developer.publishes: malformed pattern: 'build..done' has an empty segment",
        ),
        (
            "[hats.reviewer]\npublishes = ['review*']",
            "hats.reviewer.publishes: malformed pattern: 'review*': '*' must be a whole segment",
        ),
        ("[hats.reviewer]\npublishes = []", "hats.reviewer.publishes: empty"),
        ("[hats.builder]\nname = 'b'", "hats.builder: unknown key (a hat per role: planner,"),
        ("[hats.developer]\nname = 'my builder'", "hats.developer.name: 'my builder' must be"),
        (
            "[agents.a]\npreset = 'claude'\n[chains]\nplanner = ['a']\n"
            "[hats.planner]\nchain = ['a']",
            "hats.planner.chain: the planner chain is also given as chains.planner; give it once",
        ),
        ("[loop]\ncompletion_promise = 'ALL DONE'", "loop.completion_promise: 'ALL DONE' is not"),
        (
            "[loop]\ncancellation_promise = 'LOOP_COMPLETE'",
            "loop.cancellation_promise: the same topic as completion_promise",
        ),
        ("[loop]\nstale_repeats = -1", "loop.stale_repeats: must be from 0 (off) to"),
        ("[loop]\nenforce_hat_scope = 1", "loop.enforce_hat_scope: expected a boolean, got 1"),
        ("[loop]\nrequired_events = 'a'", "loop.required_events: expected an array of strings"),
        ("[redaction]\nvariables = 'A_*'", "redaction.variables: expected an array of strings"),
        ("[redaction]\nnames = ['A_*']", "redaction.names: unknown key"),
    ],
)
def test_each_mistake_names_the_file_and_key(text: str, message: str) -> None:
    """One line, naming ``ralph.toml`` and the offending key."""
    with pytest.raises(ConfigError) as raised:
        parse_config(text, "ralph.toml")
    assert message in str(raised.value)
    assert str(raised.value).startswith("ralph.toml: ")
    assert "\n" not in str(raised.value)


def test_config_error_is_a_value_error() -> None:
    """Callers can catch the builtin it resembles."""
    assert issubclass(ConfigError, ValueError)


@given(st.text(max_size=200))
def test_any_text_is_a_config_or_a_config_error(text: str) -> None:
    """Nothing but ConfigError escapes, whatever the file holds."""
    with contextlib.suppress(ConfigError):
        parse_config(text, "ralph.toml")


def test_hats_and_loop_settings_become_the_policy_a_run_records() -> None:
    """Each role's hat (defaults where unset), the promises, thresholds and timeout; "" and 0
    turn a promise or the human wait off; a hat's chain serves its role."""
    from pipeline.core.config import DEFAULT_PUBLISHES
    from pipeline.events import Role

    config = parse_config(
        """
        [agents.a]
        preset = "claude"
        [chains]
        default = ["a"]
        [hats.developer]
        name = "builder"
        publishes = ["build.*"]
        chain = ["a"]
        [loop]
        enforce_hat_scope = true
        completion_promise = ""
        cancellation_promise = "loop.cancel"
        required_events = ["review.passed"]
        stale_repeats = 0
        human_timeout_s = 0
        """,
        "ralph.toml",
    )
    policy = config.loop_policy()
    builder = policy.hat(Role.DEVELOPER)
    assert builder is not None
    assert (builder.name, builder.publishes) == ("builder", ("build.*",))
    reviewer = policy.hat(Role.REVIEWER)
    assert reviewer is not None
    assert (reviewer.name, reviewer.publishes) == ("reviewer", DEFAULT_PUBLISHES[Role.REVIEWER])
    assert policy.enforce_hat_scope
    assert policy.completion_promise is None
    assert policy.cancellation_promise == "loop.cancel"
    assert policy.required_events == ("review.passed",)
    assert policy.stale_repeats == 0
    assert policy.human_timeout_s is None
    assert config.chain_for(Role.DEVELOPER) == ("a",)


def test_review_completion_is_the_built_in_pipelines_and_on_unless_set() -> None:
    """A completion claim is reviewed unless ``[loop] review_completion = false``; a topology
    of one's own reviews as its hats' triggers say, so setting it off there is refused,
    naming the key."""
    assert parse_config("", "ralph.toml").loop_policy().review_completion
    off = parse_config("[loop]\nreview_completion = false\n", "ralph.toml")
    assert not off.loop_policy().review_completion
    topology = '[hats.builder]\ntriggers = ["task.start"]\npublishes = ["LOOP_COMPLETE"]\n'
    with pytest.raises(ConfigError, match=r"loop\.review_completion: only the built-in pipeline"):
        parse_config(topology + "[loop]\nreview_completion = false\n", "ralph.toml")
