"""Hypothesis strategies for the sandbox's values: endpoints and policies.

Registered for :class:`~pipeline.core.sandbox.Endpoint` and
:class:`~pipeline.core.sandbox.SandboxPolicy` by
:func:`~pipeline.app.testing.register_strategies`, so ``st.from_type`` builds valid ones
(hypothesis does not read their validators).
"""

from __future__ import annotations

from hypothesis import strategies as st

from pipeline.core.sandbox import (
    MAX_UID,
    Endpoint,
    NetworkMode,
    SandboxMode,
    SandboxPolicy,
)

__all__ = ["endpoints", "host_names", "sandbox_policies"]


def host_names() -> st.SearchStrategy[str]:
    """Lower-case DNS names of one to four labels (``-`` and ``_`` inside a label, never at
    its ends; not all digits, which would read as an IPv4 address), with ``localhost`` and
    the providers' hosts drawn often."""
    label = st.from_regex(r"[a-z0-9](?:[a-z0-9_-]{0,10}[a-z0-9])?", fullmatch=True)
    generated = st.lists(label, min_size=1, max_size=4).map(".".join)
    known = st.sampled_from(("localhost", "api.anthropic.com", "model.invalid", "chatgpt.com"))
    return known | generated.filter(lambda name: not name.replace(".", "").isdigit())


def endpoints() -> st.SearchStrategy[Endpoint]:
    """Endpoints on host names, IPv4 and IPv6 addresses, any port."""
    hosts = (
        host_names()
        | st.ip_addresses(v=4).map(str)
        | st.ip_addresses(v=6).map(lambda a: a.compressed)
    )
    return st.builds(Endpoint, hosts, st.integers(1, 65535))


_PATH_NAMES = st.sampled_from(("cache", "data", ".m2", "secrets", "pip", "x y", "ünï"))


def _paths() -> st.SearchStrategy[str]:
    tail = st.lists(_PATH_NAMES, min_size=1, max_size=3).map("/".join)
    return st.builds(lambda root, rest: root + rest, st.sampled_from(("~/", "/srv/", "/")), tail)


@st.composite
def sandbox_policies(draw: st.DrawFn) -> SandboxPolicy:
    """Valid policies of every mode: ``allow`` only with ``network = "allow"``."""
    network = draw(st.sampled_from(NetworkMode))
    allow = () if network is NetworkMode.NONE else tuple(draw(st.lists(endpoints(), max_size=3)))
    relative = st.lists(_PATH_NAMES, min_size=1, max_size=2).map("/".join)
    patterns = st.sampled_from(("AWS_REGION", "PIP_*", "*_URL", "LANG"))
    return SandboxPolicy(
        mode=draw(st.sampled_from(SandboxMode)),
        network=network,
        allow=allow,
        read=tuple(draw(st.lists(_paths(), max_size=3))),
        write=tuple(draw(st.lists(_paths(), max_size=3))),
        hide=tuple(draw(st.lists(_paths(), max_size=3))),
        protect=tuple(draw(st.lists(relative, max_size=3))),
        pass_env=tuple(draw(st.lists(patterns, max_size=3))),
        uid=draw(st.integers(1, MAX_UID)),
    )
