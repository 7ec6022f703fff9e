"""``ralph doctor``'s sandbox checks: whether bubblewrap starts a sandbox here, and whether each
agent's model endpoint answers from inside it (I/O: runs bwrap, opens connections).

With ``mode = "required"`` what would stop a run fails; with ``auto`` it warns (the run goes
on unsandboxed and says why); with ``off`` one line says so. A model endpoint that does not
answer from inside warns: the agent would fail before its first request.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

from pipeline.app.workspace._doctor_check import Check, Status, fail, ok, warn
from pipeline.core.config import RalphConfig
from pipeline.core.sandbox import Endpoint, NetworkMode, SandboxMode
from pipeline.handlers.runtime import (
    SandboxUnavailableError,
    agents_needs,
    global_config_secrets,
)
from pipeline.handlers.sandbox import INSTALL_HINT, probe, reach_from_inside

__all__ = ["check_sandbox"]

_NAME: Final = "sandbox"
_OFF: Final = 'or set [sandbox] mode = "off" in ralph.toml'
_USERNS_HINT: Final = (
    "allow unprivileged user namespaces (sysctl kernel.unprivileged_userns_clone=1; on "
    "Ubuntu 24.04, kernel.apparmor_restrict_unprivileged_userns=0 or an AppArmor profile "
    "for bwrap)"
)


def _fix(reason: str) -> str:
    if reason.startswith("bwrap not found"):
        return f"{INSTALL_HINT}, {_OFF}"
    if "namespace" in reason:
        return f"{_USERNS_HINT}, {_OFF}"
    return _OFF


def _endpoints(
    config: RalphConfig, environ: Mapping[str, str]
) -> tuple[dict[Endpoint, list[str]], list[Check]]:
    """Which agents need each endpoint (``allow`` entries are needed by "[sandbox] allow"),
    and a failing check for each agent whose base-URL setting is no endpoint."""
    needed: dict[Endpoint, list[str]] = {}
    for entry in config.sandbox.policy().allow:
        needed.setdefault(entry, []).append("[sandbox] allow")
    try:
        agents = agents_needs(config, environ)
    except SandboxUnavailableError as error:
        fix = "correct the agent's base URL setting"
        return needed, [fail(f"{_NAME} endpoints", str(error), fix)]
    declared = []
    for name, needs in agents.items():
        for endpoint in (*needs.endpoints, *needs.allow):
            needed.setdefault(endpoint, []).append(f"agent {name}")
        if needs.preset is not None:
            shown = ", ".join(map(str, needs.endpoints)) or "none for its model"
            declared.append(f"{name}: {shown}")
    if not declared:
        return needed, []
    # Said because ralph no longer reads the CLIs' own configuration files: a provider set
    # there (a provider entry in a CLI's own settings file) is the person's to allow.
    detail = f"declared by each agent's CLI: {'; '.join(declared)}"
    fix = "a provider set in a CLI's own configuration: name it in [agents.NAME.sandbox] allow"
    return needed, [ok(f"{_NAME} endpoints", detail, fix)]


def _git_config(environ: Mapping[str, str]) -> list[Check]:
    """A warning when git's global configuration, which the sandbox shows read-only, holds a
    secret (each named by its key, never its value)."""
    found = global_config_secrets(environ)
    if not found:
        return []
    fix = (
        "keep credentials in a credential helper (its files are hidden), not in git's "
        "configuration; a file the sandbox should not show goes in [sandbox] hide"
    )
    return [warn(f"{_NAME} git config", f"agents can read: {'; '.join(found)}", fix)]


def check_sandbox(
    config: RalphConfig, environ: Mapping[str, str], host: Mapping[str, str] | None = None
) -> list[Check]:
    """The sandbox's checks for ``config``: the probe, secrets in git's global configuration
    (shown inside), then each endpoint agents need, reached from inside. ``host``: the
    environment bwrap and git are found with (default ``environ``; a workspace's doctor
    gives it a ``PATH`` without the work trees' folders)."""
    host = environ if host is None else host
    policy = config.sandbox.policy()
    if policy.mode is SandboxMode.OFF:
        detail = "off in ralph.toml: agents run with your whole account"
        return [ok(_NAME, detail, 'set [sandbox] mode = "auto" to run them in it')]
    found = probe(host, policy.uid)
    if not found.works:
        assert found.reason is not None
        status = Status.FAIL if policy.mode is SandboxMode.REQUIRED else Status.WARN
        detail = f"{policy.mode.value}, but {found.reason}"
        return [Check(name=_NAME, status=status, detail=detail, fix=_fix(found.reason))]
    inside = "" if found.uid is None else f", uid {found.uid} inside"
    checks = [ok(_NAME, f"{found.backend} starts a sandbox here{inside}"), *_git_config(host)]
    needed, problems = _endpoints(config, environ)
    checks += problems
    if policy.network is NetworkMode.NONE:
        if needed:
            shown = ", ".join(map(str, needed))
            detail = f'network = "none", yet agents need {shown}: they cannot reach their model'
            fix = 'set [sandbox] network = "allow"'
            checks.append(warn(f"{_NAME} network", detail, fix))
        return checks
    for endpoint, why in reach_from_inside(found, list(needed)).items():
        who = ", ".join(needed[endpoint])
        name = f"{_NAME} {endpoint}"
        if why is None:
            checks.append(ok(name, f"answers from inside ({who})"))
        else:
            detail = f"does not answer from inside ({who}): {why}"
            fix = "start it, or correct the agent's base URL (or its allow entry)"
            checks.append(warn(name, detail, fix))
    return checks
