"""Remote tickets: the git remote a ticket's run moves through, checked where it is named
(``ralph submit --remote``, in the person's clone with the person's credentials) and again by
the worker that claims it (I/O: git).

The URL is kept in the store, which the whole team reads: :func:`remote_url` refuses one that
holds a password, names a transport that runs a program (``ext::``, ``fd::`` or any other
remote helper), or could be read as an option. See docs/research/many-machines-design.md.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Final
from urllib.parse import unquote, urlsplit

from pipeline import PipelineError
from pipeline.handlers.runtime import GitError, git_out, holds, revision, run_git
from pipeline.handlers.store.queue import RemoteSpec

__all__ = ["RemoteError", "listed_refs", "remote_key", "remote_spec", "remote_url"]


class RemoteError(PipelineError, ValueError):
    """A remote that a ticket cannot run through; the message names it and says why."""


_SCHEMES: Final = frozenset({"ssh", "git+ssh", "ssh+git", "https", "git", "file"})
_SCP: Final = re.compile(r"(?:[\w.~-]+@)?(?:[A-Za-z0-9][\w.-]*|\[[0-9A-Fa-f:.]+\]):(?!:)")
"""scp-like ``[user@]host:path``: a colon before any slash, and no ``::`` (a remote helper)."""


def remote_url(text: str) -> str:
    """``text`` when it is a URL a worker may fetch and push (ssh, scp-like ``host:path``,
    https, git, ``file://`` or an absolute path); :class:`RemoteError` otherwise."""
    if not text or text != text.strip() or any(ord(c) < 0x20 or c == "\x7f" for c in text):
        raise RemoteError(f"remote {text!r}: empty, or holds spaces or control characters")
    if text.startswith("-"):
        raise RemoteError(f"remote {text!r}: starts with '-', which git would read as an option")
    scheme, sep, _ = text.partition("://")
    if sep:
        return _url_with_scheme(text, scheme.lower())
    if "::" in text.split("/", 1)[0]:
        raise RemoteError(
            f"remote {text!r}: a remote helper ({text.split('::', 1)[0]}::) runs a program; "
            "give an ssh, https, git or file URL"
        )
    if text.startswith("/"):
        return text
    if _SCP.match(text):
        if re.match(r"[^/:@]+:[^/@]*@", text):
            raise _password(text)
        return text
    raise RemoteError(
        f"remote {text!r}: not an ssh, scp-like, https, git or file URL, nor an absolute path "
        "(a relative path names a different folder on each host)"
    )


def remote_key(url: str) -> str:
    """The one name of the remote at ``url`` (a :func:`remote_url`), whichever way it is
    spelt, for what must meet on it across hosts (the landings' lease): a path and its
    ``file://`` URL (no host, or ``localhost``) are the path, normalised (no ``.``, ``..``,
    doubled or trailing slash); any other URL is as written, so ``ssh://h/r`` and ``h:r``
    take two names (no host's alias or default path is guessed)."""
    parts = urlsplit(url)
    if parts.scheme.lower() == "file" and parts.netloc in ("", "localhost"):
        url = unquote(parts.path)
    # Lexical, not resolved: two folders a symlink joins may share a name, which only
    # makes their landings take turns.
    return os.path.normpath(url) if url.startswith("/") else url


def _url_with_scheme(text: str, scheme: str) -> str:
    if scheme not in _SCHEMES:
        raise RemoteError(
            f"remote {text!r}: the {scheme}:// transport is not one a worker uses "
            "(ssh, https, git or file)"
        )
    try:
        parts = urlsplit(text)
        parts.port  # noqa: B018 - parsing the port raises on a malformed one
    except ValueError as error:
        raise RemoteError(f"remote {text!r}: not a URL ({error})") from error
    if parts.password is not None or (parts.username or "").count(":"):
        raise _password(text)
    if parts.username is not None and scheme == "https":
        # A token passes as an https user name (https://TOKEN@host/...), never shown here.
        raise RemoteError(
            f"remote https://***@{parts.netloc.rpartition('@')[2]}{parts.path}: an https URL's "
            "user name is often a token, and the store is read by the whole team: configure "
            "a credential helper (credential.username for the name) and give the URL without it"
        )
    if scheme == "file":
        if parts.netloc or not parts.path.startswith("/"):
            raise RemoteError(f"remote {text!r}: a file URL is file:///absolute/path")
    elif not parts.hostname or any(
        name.startswith("-") for name in (parts.hostname, parts.username or "")
    ):
        raise RemoteError(f"remote {text!r}: no host, or a name git could read as an option")
    return text


def _password(text: str) -> RemoteError:
    # Named without the secret: the message may reach a terminal or a log.
    shown = re.sub(r"(?<=:)[^/:@]*(?=@)", "***", text, count=1)
    return RemoteError(
        f"remote {shown!r} holds a password; the store is read by the whole team: configure "
        "a credential helper (git config --global credential.helper) and give the URL without it"
    )


def remote_spec(
    root: Path, remote: str, *, ticket: str, branch: str | None, rebase_onto: str | None
) -> RemoteSpec:
    """The remote ticket ``ticket`` of the clone ``root`` runs through: ``remote`` is a URL or
    the name of one of the clone's remotes. Refuses (:class:`RemoteError`) a detached HEAD, a
    configured ``[run] branch`` (the branch is the ticket's), and a HEAD or ``rebase_onto`` the
    remote lacks, and a workspace that is not the top of its clone."""
    named = "/" not in remote and ":" not in remote
    if named:
        done = run_git(root, "remote", "get-url", "--end-of-options", remote, check=False)
        if done.returncode != 0:
            raise RemoteError(f"--remote {remote!r}: no such remote in {root}, and not a URL")
        remote = done.stdout.strip()
    url = remote_url(remote)
    if branch is not None:
        raise RemoteError(
            f"ralph.toml sets branch = {branch!r}; a remote ticket works on its own branch "
            f"ralph/run-{ticket}: remove the setting to submit with --remote"
        )
    top = git_out(root, "rev-parse", "--show-toplevel", error=RemoteError).strip()
    if Path(top).resolve() != root.resolve():
        raise RemoteError(
            f"{root} is a folder inside the clone {top}; a remote ticket's workspace is the "
            "top of its clone, as the worker's clone will be"
        )
    target = run_git(root, "symbolic-ref", "-q", "--short", "HEAD", check=False).stdout.strip()
    if not target:
        raise RemoteError(f"{root}: HEAD is detached; check out the branch the run lands on")
    base = git_out(root, "rev-parse", "--verify", "HEAD^{commit}", error=RemoteError).strip()
    tip = _remote_tip(root, url, target)
    if tip is None:
        raise RemoteError(f"{url} has no branch {target}: push {target} first")
    if tip != base:
        if revision(root, tip) is None:
            # Someone else pushed to the target: bring its commits in (no ref written) to tell
            # a clone behind the remote, which may submit, from one ahead of it.
            run_git(root, "fetch", "--quiet", "--no-tags", "--no-write-fetch-head",
                    "--end-of-options", url, f"refs/heads/{target}", check=False)  # fmt: skip
        if not holds(root, tip, base):
            raise RemoteError(
                f"{url}'s {target} (at {tip[:12]}) does not hold this clone's HEAD "
                f"{base[:12]}: push {target} first (pull first if the push is refused)"
            )
    if rebase_onto is not None and _remote_tip(root, url, rebase_onto) is None:
        raise RemoteError(f"{url} has no branch {rebase_onto} (rebase_onto): push it first")
    return RemoteSpec(url=url, base=base, target=target, branch=f"ralph/run-{ticket}")


def _remote_tip(root: Path, url: str, branch: str) -> str | None:
    """The commit ``url``'s ``branch`` is at, or None when it has no such branch."""
    ref = f"refs/heads/{branch}"
    try:
        said = git_out(root, "ls-remote", "--end-of-options", url, ref)
    except GitError as error:
        raise RemoteError(f"cannot read {url}: {error}") from error
    return listed_refs(said, ref)[0]


def listed_refs(printed: str, *refs: str) -> tuple[str | None, ...]:
    """The commit each of ``refs`` is at in what ``git ls-remote`` ``printed`` (None: not
    listed; a ref is matched whole, not by the tail git's pattern matches)."""
    found = {}
    for line in printed.splitlines():
        sha, _tab, ref = line.partition("\t")
        found[ref] = sha
    return tuple(found.get(ref) for ref in refs)
