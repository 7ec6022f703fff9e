"""Secrets in git's global configuration, which the sandbox shows read-only (I/O: runs
``git config``).

An agent's ``git commit`` needs the person's name and e-mail, so ``~/.gitconfig`` and
``~/.config/git`` are bound back into the sandbox's empty ``$HOME``
(:data:`pipeline.core.sandbox.GIT_CONFIG_PATHS`): whatever else they hold, the agent reads.
Credentials belong in a credential helper (its files are on the deny list); these checks find
the ones written into the configuration itself. A warning names the key, never its value, and
a password in a key's own name (``url.<URL>.insteadOf``) is masked.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
from collections.abc import Mapping
from pathlib import Path
from typing import Final

from pipeline.core.sandbox import GIT_CONFIG_PATHS, expand_home
from pipeline.handlers.runtime._gitcmd import git_environment

__all__ = ["global_config_secrets"]

_TIMEOUT_S: Final = 10.0
_EXTRA_HEADER: Final = re.compile(r"^http\.(?:.*\.)?extraheader$")
_INSTEAD_OF: Final = re.compile(r"^url\..*\.(?:push)?insteadof$")
_HELPER: Final = re.compile(r"^credential\.(?:.*\.)?helper$")
# A URL's password, up to the last ``@``: loose on purpose (a password may hold ``/`` or ``@``),
# since a false alarm costs a line and a miss a secret.
_PASSWORD: Final = re.compile(r"(?P<user>://[^/@:]*:).+@")


def _entries(environ: Mapping[str, str]) -> list[tuple[str, str]]:
    """(key, value) of every entry of git's global configuration and the files it includes
    (none when there is none or git cannot read it). Run from ``/``: no repository's
    ``includeIf`` applies, and nothing of a workspace is read."""
    try:
        done = subprocess.run(
            ["git", "config", "--global", "--includes", "--null", "--list"],
            cwd="/",
            env=git_environment(environ),
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=_TIMEOUT_S,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return []
    if done.returncode != 0:
        return []
    # ``--null``: each entry is ``key\nvalue\0`` (a key without a value has no ``\n``).
    entries = done.stdout.decode("utf-8", "replace").split("\0")
    return [(key, value) for key, _, value in (e.partition("\n") for e in entries if e)]


def _store_file(helper: str) -> str | None:
    """The file ``git credential-store`` keeps passwords in under the helper ``helper``, when
    it names one with ``--file`` (its default files are on the deny list)."""
    try:
        words = shlex.split(helper)
    except ValueError:
        return None
    if not words or words[0] not in ("store", "git-credential-store"):
        return None
    for word, after in zip(words, [*words[1:], ""], strict=True):
        if word.startswith("--file="):
            return word.removeprefix("--file=")
        if word == "--file":
            return after
    return None


def _shown(path: str, home: str) -> bool:
    """Whether the sandbox shows ``path``: all but the empty ``$HOME`` (and the private
    ``/tmp``) is shown read-only, and git's configuration is bound back into ``$HOME``."""
    file = Path(os.path.realpath(expand_home(path, home)))
    if any(file.is_relative_to(os.path.realpath(expand_home(p, home))) for p in GIT_CONFIG_PATHS):
        return True
    return not (file.is_relative_to(os.path.realpath(home)) or file.is_relative_to("/tmp"))


def global_config_secrets(environ: Mapping[str, str]) -> tuple[str, ...]:
    """What in git's global configuration (``GIT_CONFIG_GLOBAL``, else ``~/.gitconfig`` and
    ``~/.config/git/config``) a sandboxed agent could read as a secret, one warning each,
    naming the key: an ``http.extraheader`` (an ``Authorization`` header, as CI writes it), a
    ``url.<URL>.insteadOf`` whose URLs hold a password, a ``credential.helper = store
    --file=PATH`` keeping its file where the sandbox shows it."""
    home = environ.get("HOME", os.path.expanduser("~"))
    found: list[str] = []
    for key, value in _entries(environ):
        # A subsection is a URL, which may hold a password itself: every key shown is masked.
        named = _PASSWORD.sub(r"\g<user>[redacted:password]@", key)
        if _EXTRA_HEADER.match(key):
            found.append(f"{named} sends an HTTP header (often a token)")
        elif _INSTEAD_OF.match(key) and _PASSWORD.search(f"{key} {value}"):
            found.append(f"{named} holds a password")
        elif _HELPER.match(key) and (store := _store_file(value)) and _shown(store, home):
            found.append(f"{named} keeps passwords in {store}, which the sandbox shows")
    return tuple(dict.fromkeys(found))
