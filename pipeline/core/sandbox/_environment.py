"""The environment an agent gets inside the sandbox (pure): section 7 of
``docs/research/sandbox-design.md``.

bwrap starts the agent with ``--clearenv``; what it gets back is, from the environment ralph
would have given it (``environ``): the :data:`DOCUMENTED_VARIABLES` and whatever the
``pass_env`` patterns name (the preset's, the agent's ``sandbox.pass_env``, ``[sandbox]
pass_env``); then ``set_env`` (the agent's ``env``, or a gate's), set as given; then ``TMPDIR``.
Every other variable stays out, and :func:`withheld_variables` names them (names only) for the
``SandboxChecked`` fact, so a missing one is easy to find.

Two lists of patterns are kept out of the documented set whatever their names look like:
:data:`RALPH_ONLY_VARIABLES` (ralph's store URL and libpq's variables) never pass, not even
through a ``pass_env`` pattern; a name matching :data:`SECRET_VARIABLES` (``*_TOKEN``,
``*_KEY``, ...) passes only when a ``pass_env`` pattern names it (``ANTHROPIC_*`` for
``ANTHROPIC_API_KEY``). Both lists are the only ones: the handlers' redaction and the agents'
environment import them from here.

What a process is told about itself is here too: :func:`with_account` gives ``/etc/passwd``
and ``/etc/group`` a line for the uid inside when the host has none (Node's ``os.userInfo()``
throws without one, section 2 of the design); the handler shows these texts as two of
:attr:`~pipeline.core.sandbox.MountInputs.data_files`.
"""

from __future__ import annotations

import types
from collections.abc import Mapping
from fnmatch import fnmatchcase
from typing import Final, final

from attrs import field, frozen

__all__ = [
    "ACCOUNT_NAME",
    "DOCUMENTED_VARIABLES",
    "RALPH_ONLY_VARIABLES",
    "SANDBOX_TMPDIR",
    "SECRET_VARIABLES",
    "EnvironmentRules",
    "sandbox_environment",
    "with_account",
    "withheld_variables",
]

DOCUMENTED_VARIABLES: Final = (
    "PATH",
    "HOME",
    "USER",
    "LOGNAME",
    "SHELL",
    # Some CLIs take their project folder from PWD; ralph sets it to the workspace.
    "PWD",
    "LANG",
    "LANGUAGE",
    "LC_*",
    "TERM",
    "TZ",
    "COLORTERM",
    "NO_COLOR",
    "XDG_*_HOME",
    "GIT_AUTHOR_*",
    "GIT_COMMITTER_*",
    # How Python behaves, not what it runs: no bytecode files in the workspace, unbuffered or
    # UTF-8 output (PYTHONPATH and PYTHONSTARTUP name code, and stay out).
    "PYTHONDONTWRITEBYTECODE",
    "PYTHONUNBUFFERED",
    "PYTHONIOENCODING",
    "PYTHONUTF8",
    # The run's own (RALPH_RUN_ID, RALPH_EVENTS_FILE, RALPH_ROLE, ...), as agents get them
    # today; RALPH_ONLY_VARIABLES are taken out below.
    "RALPH_*",
)
"""Names and shell patterns (case-sensitive) every sandboxed process gets from ralph's
environment: what programs need to run, find their tools, speak the language and commit."""

RALPH_ONLY_VARIABLES: Final = ("RALPH_STORE", "PG*")
"""Variables of ralph's own that no agent gets, sandboxed or not, whatever a pattern says: the
store URL (``RALPH_STORE``, with the team's database password in a worker's environment) and
every libpq variable (``PGPASSWORD``, ``PGHOST``...) ralph's PostgreSQL store reads. The
handlers strip them from every agent's environment too. An agent that needs a database of its
own is given one in ``[agents.NAME] env``."""

SECRET_VARIABLES: Final = (
    "*_KEY",
    "*_KEYS",
    "*_TOKEN",
    "*_TOKENS",
    "*_SECRET",
    "*_SECRETS",
    "*PASSWORD*",
    "*PASSWD*",
    "*_CREDENTIALS",
    "*_PAT",
    "PGPASSWORD",
    "RALPH_STORE",
)
"""Names (shell patterns, any case) whose values are secrets: a ``pass_env`` pattern must name
them; the documented set never does. The handlers' redaction masks their values too."""

SANDBOX_TMPDIR: Final = "/tmp"
"""``TMPDIR`` inside, always: the sandbox's private ``/tmp`` (a ``TMPDIR`` under ``$HOME``
would be hidden, and a CLI failing to make its temporary folder says little about why)."""


def _frozen_mapping(value: Mapping[str, str]) -> Mapping[str, str]:
    return types.MappingProxyType(dict(value))


@final
@frozen(kw_only=True)
class EnvironmentRules:
    """What a sandboxed process gets beside the documented set.

    ``pass_env``: more names or shell patterns (case-sensitive) taken from the environment.
    ``set_env``: variables set as given after the filter (the agent's ``env``, a gate's, the
    proxy's), never filtered: the person wrote them for this agent.
    """

    pass_env: tuple[str, ...] = ()
    set_env: Mapping[str, str] = field(
        factory=dict, converter=_frozen_mapping, hash=False, repr=lambda m: repr(dict(m))
    )


def _matches(name: str, patterns: tuple[str, ...]) -> bool:
    return any(fnmatchcase(name, pattern) for pattern in patterns)


def _passes(name: str, rules: EnvironmentRules) -> bool:
    """Whether the environment's variable ``name`` reaches the sandboxed process."""
    if _matches(name, RALPH_ONLY_VARIABLES):
        return False
    if _matches(name, rules.pass_env):
        return True
    return _matches(name, DOCUMENTED_VARIABLES) and not _matches(name.upper(), SECRET_VARIABLES)


def sandbox_environment(environ: Mapping[str, str], rules: EnvironmentRules) -> dict[str, str]:
    """The whole environment of a sandboxed process: ``environ`` filtered (see the module),
    then ``rules.set_env``, then ``TMPDIR`` = :data:`SANDBOX_TMPDIR`."""
    kept = {name: value for name, value in environ.items() if _passes(name, rules)}
    return {**kept, **rules.set_env, "TMPDIR": SANDBOX_TMPDIR}


def withheld_variables(environ: Mapping[str, str], rules: EnvironmentRules) -> tuple[str, ...]:
    """The names of ``environ``'s variables the sandboxed process does not get, sorted (what
    ``set_env`` sets anew and ``TMPDIR`` are not withheld)."""
    given = {*rules.set_env, "TMPDIR"}
    return tuple(sorted(n for n in environ if n not in given and not _passes(n, rules)))


ACCOUNT_NAME: Final = "ralph"
"""The name given to the uid inside when the host has no account for it."""


def _fields(text: str) -> list[list[str]]:
    return [line.split(":") for line in text.splitlines() if line and not line.startswith("#")]


def _append(text: str, line: str) -> str:
    return f"{text}{'' if not text or text.endswith(chr(10)) else chr(10)}{line}\n"


def with_account(passwd: str, group: str, uid: int, home: str) -> tuple[str, str]:
    """``passwd`` and ``group`` with an account and a group for ``uid`` (its gid too) added
    where none has that number, its home ``home`` and its shell ``/bin/sh``; a name already
    taken gets the number after it (``ralph1000``)."""
    users = _fields(passwd)
    groups = _fields(group)
    taken = {f[0] for f in users} | {f[0] for f in groups}
    name = ACCOUNT_NAME if ACCOUNT_NAME not in taken else f"{ACCOUNT_NAME}{uid}"
    if not any(len(f) > 2 and f[2] == str(uid) for f in users):
        passwd = _append(passwd, f"{name}:x:{uid}:{uid}:ralph's sandbox:{home}:/bin/sh")
    if not any(len(f) > 2 and f[2] == str(uid) for f in groups):
        group = _append(group, f"{name}:x:{uid}:")
    return passwd, group
