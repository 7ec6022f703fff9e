"""``SandboxPolicy`` keeps the checks that need no workspace (section 5's validation)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pipeline.core.sandbox import (
    DEFAULT_UID,
    Endpoint,
    NetworkMode,
    SandboxError,
    SandboxMode,
    SandboxPolicy,
)


def test_the_defaults_are_the_designs() -> None:
    """``auto``, the model endpoints allowed, uid 1000 inside, nothing added."""
    policy = SandboxPolicy()
    assert (policy.mode, policy.network, policy.uid) == (
        SandboxMode.AUTO,
        NetworkMode.ALLOW,
        DEFAULT_UID,
    )
    assert policy.allow == policy.read == policy.write == policy.protect == ()


def test_a_full_policy_is_accepted() -> None:
    """Section 5's example, as values."""
    policy = SandboxPolicy(
        mode=SandboxMode.REQUIRED,
        allow=(Endpoint("pkgs.example", 443),),
        read=("~/.m2",),
        write=("~/.cache/pip",),
        hide=("/srv/secrets",),
        protect=("Makefile.local", "tools/run.sh"),
        pass_env=("AWS_REGION", "PIP_*"),
        uid=4242,
    )
    assert policy.protect == ("Makefile.local", "tools/run.sh")


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"network": NetworkMode.NONE, "allow": (Endpoint("a.example", 1),)}, "allow needs"),
        ({"read": ("relative/path",)}, "read entry 'relative/path' must be absolute"),
        ({"read": ("~",)}, "must be absolute or start with ~/"),
        ({"read": ("~/",)}, "would uncover all of"),
        ({"write": ("/",)}, "would uncover all of"),
        ({"write": ("~/a/../../etc",)}, "written plainly"),
        ({"hide": ("/srv/x/",)}, "written plainly"),
        ({"hide": ("//srv",)}, "must be absolute"),
        ({"protect": ("../outside",)}, "plain path inside the workspace"),
        ({"protect": ("/abs",)}, "plain path inside the workspace"),
        ({"protect": (".",)}, "plain path inside the workspace"),
        ({"protect": ("",)}, "plain path inside the workspace"),
        ({"pass_env": ("A=B",)}, "pass_env entry 'A=B'"),
        ({"pass_env": ("",)}, "pass_env entry ''"),
        ({"uid": 0}, "uid must be from 1 to 65533"),
        ({"uid": 65534}, "uid must be from 1 to 65533"),
    ],
)
def test_each_bad_setting_is_named(changes: dict[str, Any], message: str) -> None:
    """Each rule refuses with a SandboxError naming the key and the value."""
    with pytest.raises(SandboxError, match=message):
        SandboxPolicy(**changes)


@given(st.from_type(SandboxPolicy))
def test_the_registered_strategy_builds_valid_policies(policy: SandboxPolicy) -> None:
    """``st.from_type`` works on the policy (``pipeline.app.testing`` registers it), and what it
    draws keeps the one rule between fields."""
    assert not (policy.network is NetworkMode.NONE and policy.allow)
