"""`[sandbox]` and `[agents.NAME] sandbox` as ralph.toml gives them: the policy a run uses, and a
one-line error naming the key for everything wrong."""

from __future__ import annotations

import pytest

from pipeline import PipelineError
from pipeline.core.config import dump_toml, parse_config
from pipeline.core.sandbox import Endpoint, NetworkMode, SandboxMode, SandboxPolicy

AGENT = '[agents.claude]\npreset = "claude"\n'


def refused(text: str) -> str:
    with pytest.raises(PipelineError) as caught:
        parse_config(text, "ralph.toml")
    return str(caught.value)


def test_without_a_sandbox_table_the_sandbox_is_on_where_it_works() -> None:
    policy = parse_config("", "ralph.toml").sandbox.policy()
    assert policy == SandboxPolicy(mode=SandboxMode.AUTO)


def test_every_key_reaches_the_policy() -> None:
    text = """
[sandbox]
mode = "required"
network = "allow"
allow = ["pkgs.example:443", "[::1]:8080", "pkgs.example:443"]
read = ["~/.m2"]
write = ["~/.cache/pip", "/srv/scratch"]
hide = ["/srv/secrets"]
protect = ["Makefile.local"]
pass_env = ["AWS_REGION", "MY_*"]
uid = 4242
"""
    policy = parse_config(text, "ralph.toml").sandbox.policy()
    assert policy == SandboxPolicy(
        mode=SandboxMode.REQUIRED,
        network=NetworkMode.ALLOW,
        allow=(Endpoint("pkgs.example", 443), Endpoint("::1", 8080)),
        read=("~/.m2",),
        write=("~/.cache/pip", "/srv/scratch"),
        hide=("/srv/secrets",),
        protect=("Makefile.local",),
        pass_env=("AWS_REGION", "MY_*"),
        uid=4242,
    )


def test_an_agent_adds_its_own_needs() -> None:
    text = AGENT + 'sandbox = { write = ["~/.claude-work"], pass_env = ["ANTHROPIC_*"] }\n'
    agent = parse_config(text, "ralph.toml").agents["claude"]
    assert agent.sandbox.write == ("~/.claude-work",)
    assert agent.sandbox.pass_env == ("ANTHROPIC_*",)
    assert agent.sandbox.read == ()


@pytest.mark.parametrize(
    ("text", "named"),
    [
        ('[sandbox]\nmode = "on"\n', "sandbox.mode: 'on' is not one of auto, required, off"),
        ('[sandbox]\nnetwork = "some"\n', "sandbox.network: 'some' is not one of allow, none"),
        ('[sandbox]\nallow = ["pkgs.example"]\n', "sandbox.allow: no port in 'pkgs.example'"),
        ('[sandbox]\nallow = ["h:0"]\n', "sandbox.allow: 'h:0': endpoint port must be from 1"),
        ('[sandbox]\nread = ["relative/x"]\n', "sandbox.read: 'relative/x' must be absolute"),
        ('[sandbox]\nwrite = ["~/"]\n', "sandbox.write: '~/' would uncover all of $HOME"),
        ('[sandbox]\nread = ["/"]\n', "sandbox.read: '/' would uncover all of $HOME"),
        ('[sandbox]\nhide = ["~/a/../b"]\n', "sandbox.hide: '~/a/../b' must be written plainly"),
        ('[sandbox]\nprotect = ["../x"]\n', "sandbox.protect: '../x' must be a plain path"),
        ('[sandbox]\nprotect = ["/etc"]\n', "sandbox.protect: '/etc' must be a plain path"),
        ('[sandbox]\npass_env = ["A=B"]\n', "sandbox.pass_env: 'A=B' is not a variable name"),
        ("[sandbox]\nuid = 0\n", "sandbox.uid: must be from 1 to 65533, got 0"),
        ("[sandbox]\nuid = 65534\n", "sandbox.uid: must be from 1 to 65533, got 65534"),
        (
            '[sandbox]\nnetwork = "none"\nallow = ["h:1"]\n',
            'sandbox.allow: needs network = "allow"',
        ),
        (
            AGENT + 'sandbox = { read = ["x"] }\n',
            "agents.claude.sandbox.read: 'x' must be absolute",
        ),
        (
            AGENT + 'sandbox = { allow = ["nowhere"] }\n',
            "agents.claude.sandbox.allow: no port in 'nowhere'",
        ),
        (
            '[sandbox]\nnetwork = "none"\n' + AGENT + 'sandbox = { allow = ["h:1"] }\n',
            'agents.claude.sandbox.allow: needs [sandbox] network = "allow"',
        ),
        (AGENT + 'sandbox = { hide = ["/x"] }\n', "hide"),
        ('[sandbox]\nread = "~/.m2"\n', "sandbox.read"),
        ('[sandbox]\nuid = "1000"\n', "sandbox.uid"),
    ],
)
def test_a_mistake_is_named_with_its_key(text: str, named: str) -> None:
    message = refused(text)
    assert message.startswith("ralph.toml: ")
    assert named in message


def test_every_mistake_is_named_at_once() -> None:
    message = refused('[sandbox]\nmode = "x"\nread = ["a"]\nwrite = ["b"]\n')
    assert "sandbox.mode" in message
    assert "sandbox.read: 'a'" in message
    assert "sandbox.write: 'b'" in message


def test_the_tables_survive_a_round_trip_through_toml() -> None:
    sandbox = {"mode": "auto", "allow": ["pkgs.example:443"], "protect": ["Makefile"]}
    agent = {"preset": "claude", "sandbox": {"write": ["~/.claude-work"]}}
    text = dump_toml({"sandbox": sandbox, "agents": {"claude": agent}})
    config = parse_config(text, "ralph.toml")
    assert config.sandbox.policy().allow == (Endpoint("pkgs.example", 443),)
    assert config.agents["claude"].sandbox.write == ("~/.claude-work",)
    assert parse_config(dump_toml({"sandbox": sandbox}), "ralph.toml").sandbox == config.sandbox
