"""The one way ralph runs git: with everything the workspace could plant switched off (I/O).

An agent works in the repository with full rights, so anything git takes from the repository
can be the agent's code: hooks (``.git/hooks``, ``core.hooksPath``), ``core.fsmonitor``,
``core.alternateRefsCommand``, attribute filters and merge drivers (``filter.X.clean`` named by
a ``.gitattributes`` line), external diff and textconv programs, a signing program, and the
configuration of any repository inside the work tree, which a dirtiness check reads. Every git
command ralph runs goes through :func:`run_git`, which switches those off on the command line
(``-c`` beats every config file) unless the person opted in (``[git]`` in ``ralph.toml``; then
the configuration as it was when the run started counts, since :mod:`._gitguard` puts back
whatever an agent changed), in an environment of ralph's choosing: no editor, pager or
terminal prompt, and no ``GIT_*`` variable that would point git at another repository or
program.

With hooks or filters on, a run's git commands run in the run's sandbox (the policy's
``sandbox``): the hooks and filters they start are code the agent may have written (a
``core.hooksPath`` in the work tree, a filter script it edited), and run where the agent does.
"""

from __future__ import annotations

import contextlib
import os
import re
import subprocess
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from functools import cache
from pathlib import Path
from typing import Any, Protocol

from pipeline import PipelineError

# Not through pipeline.handlers.sandbox, whose package loads the sandbox whole: a read
# command's git (``ralph status``'s lean path) needs only the PATH filter.
from pipeline.handlers._host_path import host_path
from pipeline.handlers.runtime._layout import git_dirs, git_location

__all__ = [
    "EFFECT_TRAILER",
    "PLAIN",
    "CommandSandbox",
    "GitError",
    "GitPolicy",
    "WrappedCommand",
    "configured_drivers",
    "effect_commits",
    "git_environment",
    "git_options",
    "git_out",
    "gitlink_excludes",
    "holds",
    "outside_pathspec",
    "pinned_locations",
    "repository_drivers",
    "resolved",
    "revision",
    "run_git",
    "run_git_bytes",
    "work_trees",
]

TIMEOUT_S = 600
"""How long one git command may take."""


class GitError(PipelineError):
    """A git command failed; the message holds the command and what git said."""


# The records here are dataclasses, not attrs: the lean ``ralph status`` runs git through
# this module, and dataclasses is loaded there anyway (rich and orjson import it); attrs
# would add about a tenth to it.
@dataclass(frozen=True, kw_only=True, slots=True)
class WrappedCommand:
    """A command as a sandbox runs it: its command line, its whole environment and the
    descriptors it inherits."""

    argv: tuple[str, ...]
    env: Mapping[str, str]
    pass_fds: tuple[int, ...] = ()


class CommandSandbox(Protocol):
    """Where ralph's git runs when it may run the repository's own code: a run's sandbox."""

    def wrapped(
        self, argv: tuple[str, ...], cwd: Path, env: Mapping[str, str]
    ) -> contextlib.AbstractContextManager[WrappedCommand]:
        """``argv`` (run in ``cwd`` with ``env``) as the sandbox runs it, for the time of the
        ``with`` block; raises :class:`GitError` when the sandbox cannot be laid out."""
        ...


@dataclass(frozen=True, kw_only=True, slots=True)
class GitPolicy:
    """What of the repository's own code ralph's git commands may run (``[git]``)."""

    run_hooks: bool = False
    """Run the repository's hooks (but pre-commit and commit-msg: ralph commits ``--no-verify``)."""
    sign: bool = False
    """Sign ralph's commits with the configured signing program."""
    run_filters: bool = False
    """Run the attribute filters and merge drivers the repository's config defines."""
    drivers: tuple[tuple[str, str], ...] | None = None
    """(kind, name) of every filter and merge driver the repository's config defines, switched
    off unless ``run_filters`` (see :func:`configured_drivers`); None: read from the repository
    by :func:`run_git`."""
    sandbox: CommandSandbox | None = field(default=None, compare=False)
    """Where git runs when ``run_hooks`` or ``run_filters`` lets it run the repository's code
    (None: directly, as with both off)."""


PLAIN = GitPolicy()
"""ralph's git with nothing of the repository's code run: no hooks, filters or signing."""


_KEPT_VARIABLES = frozenset(
    {
        "GIT_AUTHOR_NAME",
        "GIT_AUTHOR_EMAIL",
        "GIT_AUTHOR_DATE",
        "GIT_COMMITTER_NAME",
        "GIT_COMMITTER_EMAIL",
        "GIT_COMMITTER_DATE",
        "GIT_CONFIG_GLOBAL",
        "GIT_CEILING_DIRECTORIES",
    }
)
"""The ``GIT_*`` variables of ralph's own environment its git keeps: who commits, and which
global config is the person's."""


def git_environment(base: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment of ralph's git: ``base`` (default: this process's) without the ``GIT_*``
    variables that redirect git (``GIT_DIR``, ``GIT_CONFIG_PARAMETERS``, ``GIT_EXTERNAL_DIFF``,
    ...), with no editor or pager and no prompt for credentials.

    The system config is kept on purpose: only an administrator writes it (an agent that can
    is root, and could change ralph itself), and it holds what the repository may need to work
    at all: ``safe.directory`` in containers, git-lfs's filter (without it a large file would
    be committed whole).
    """
    source = os.environ if base is None else base
    env = {k: v for k, v in source.items() if not k.startswith("GIT_") or k in _KEPT_VARIABLES}
    env.update(
        GIT_TERMINAL_PROMPT="0",
        GIT_EDITOR=":",
        GIT_SEQUENCE_EDITOR=":",
        GIT_PAGER="cat",
        GIT_OPTIONAL_LOCKS="0",
    )
    return env


@cache
def _environment() -> Mapping[str, str]:
    # Built once per process: ralph's own environment does not change under it.
    return git_environment()


_ALWAYS = (
    "core.fsmonitor=false",
    "core.useBuiltinFSMonitor=false",
    # An automatic gc is a second git process inside ralph's commit (and a slow one).
    "gc.auto=0",
    "maintenance.auto=false",
    # The ext:: transport runs any command; ralph's git never needs a transport.
    "protocol.ext.allow=never",
    # A diff or status of the work tree asks each submodule, and each repository an agent
    # made inside the tree (a gitlink once added), whether it is dirty, by a ``git status``
    # in it that reads that repository's own configuration, which may name a filter: the
    # agent's code, run with ralph's rights. Changes of their commits still show.
    "diff.ignoreSubmodules=dirty",
    # A fetch lists the refs of each repository named in ``objects/info/alternates`` with
    # this shell command when it is set: a file and a setting the agent can write. ``true``
    # lists none, which only costs the fetch the objects it could have skipped.
    "core.alternateRefsCommand=true",
)


def gitlink_excludes(listing: str) -> tuple[str, ...]:
    """Pathspecs leaving out of a ``git add`` every gitlink of ``listing`` (the output of
    ``ls-files --stage -z``): ``add`` asks each one's repository whether it is dirty whatever
    ``diff.ignoreSubmodules`` says, and that repository may be one an agent made, with a
    filter of its own in its configuration. A submodule's new commit is left out with it."""
    found: list[str] = []
    for record in listing.split("\0"):
        meta, tab, path = record.partition("\t")
        if tab and meta.startswith("160000 "):
            found.append(f":(exclude,literal){path}")
    return tuple(found)


def git_options(policy: GitPolicy) -> tuple[str, ...]:
    """The ``-c`` options that switch off, for one git command, what ``policy`` does not allow."""
    options: list[str] = []
    for setting in _ALWAYS:
        options += ["-c", setting]
    if not policy.run_hooks:
        # No hook can live under /dev/null: git finds none and runs none.
        options += ["-c", f"core.hooksPath={os.devnull}"]
    if not policy.sign:
        options += ["-c", "commit.gpgSign=false", "-c", "tag.gpgSign=false"]
    if not policy.run_filters:
        for kind, name in policy.drivers or ():
            if kind == "filter":
                # Without a command nothing runs; ``required`` makes a path that needs the
                # filter fail the command instead of reaching a commit unfiltered.
                for key, value in (("clean", ""), ("smudge", ""), ("process", "")):
                    options += ["-c", f"filter.{name}.{key}={value}"]
                options += ["-c", f"filter.{name}.required=true"]
            else:
                options += ["-c", f"merge.{name}.driver="]
    return tuple(options)


_SHOWING_DIFFS = frozenset({"diff", "log", "show"})
"""The commands that can show a diff, and so run an external diff or textconv program of the
repository's configuration, which no ``-c`` can name in advance (one per attribute)."""


def _argv(root: Path, args: tuple[str, ...], policy: GitPolicy, bare: bool = False) -> list[str]:
    """The command line of ``git ARGS`` under ``policy`` (the repository's drivers read once);
    a command that can show a diff runs no external diff or textconv program."""
    if not policy.run_filters and policy.drivers is None:
        found = configured_drivers((root / "config",)) if bare else repository_drivers(root)
        policy = replace(policy, drivers=found)
    if args and args[0] in _SHOWING_DIFFS:
        # After the caller's options, before a ``--`` or ``--end-of-options``, where an
        # option is still read as one: the command reads as the caller wrote it.
        end = next((i for i, a in enumerate(args) if a in ("--", "--end-of-options")), len(args))
        args = (*args[:end], "--no-ext-diff", "--no-textconv", *args[end:])
    return ["git", *git_options(policy), *args]


def pinned_locations(root: Path) -> dict[str, str]:
    """The variables that tell git which repository ``root`` is in (``GIT_DIR``,
    ``GIT_COMMON_DIR``, ``GIT_WORK_TREE``), found by :func:`git_dirs`; none outside a
    repository.

    Given explicitly, they leave git nothing to look up in files an agent could have written:
    git reads ``$GIT_DIR/commondir`` (even in a main ``.git``) unless ``GIT_COMMON_DIR`` says
    where the common folder is, and a ``commondir`` pointing at a folder of the agent's making
    would hand git that folder's ``config`` (filters, ``core.fsmonitor``) and hooks.
    """
    found = git_location(root)
    if found is None:
        return {}
    top, (git_dir, common) = found
    return {"GIT_DIR": str(git_dir), "GIT_COMMON_DIR": str(common), "GIT_WORK_TREE": str(top)}


def work_trees(root: Path) -> tuple[Path, ...]:
    """The work trees an agent working in ``root`` may write: the one ``root`` lies in and
    its repository's main one (the common folder's parent), or ``root`` outside a repository."""
    found = git_location(root)
    if found is None:
        return (root,)
    top, (_git_dir, common) = found
    return tuple(dict.fromkeys((top, common.parent)))


def _where(
    policy: GitPolicy, argv: list[str], root: Path, index: Path | None = None, bare: bool = False
) -> contextlib.AbstractContextManager[WrappedCommand]:
    """``argv`` as it runs under ``policy``: in its sandbox when it may run the repository's
    hooks or filters, else directly; told where its repository is (:func:`pinned_locations`,
    or ``root`` itself when ``bare``) and, with ``index``, which index file to use instead of
    the worktree's."""
    # A bare repository is named, never looked for: walking up from it would find the
    # repository it may lie in (a cache under a home folder kept in git). Not its common
    # folder too: with GIT_COMMON_DIR set, git takes the folder for a work tree.
    where = {"GIT_DIR": str(root)} if bare else pinned_locations(root)
    env = {**_environment(), **where}
    if index is not None:
        env["GIT_INDEX_FILE"] = str(index)
    if policy.sandbox is None or not (policy.run_hooks or policy.run_filters):
        # On the host: ``git`` (and what git starts by name) is found on a PATH without the
        # work trees' folders, where an agent could have put a ``git`` of its own.
        env["PATH"] = host_path(env.get("PATH", os.defpath), (root,) if bare else work_trees(root))
        return contextlib.nullcontext(WrappedCommand(argv=tuple(argv), env=env))
    return policy.sandbox.wrapped(tuple(argv), root, env)


def _run(
    root: Path,
    args: tuple[str, ...],
    policy: GitPolicy,
    check: bool,
    index: Path | None = None,
    bare: bool = False,
    **io: Any,
) -> subprocess.CompletedProcess[Any]:
    """``git ARGS`` as :func:`run_git` runs it, its input and output as ``io`` says."""
    if bare and (root / "commondir").exists():
        # git would read the repository's objects and refs from where that file says.
        raise GitError(
            f"git {' '.join(args)}: {root} holds a commondir file: not a bare repository"
        )
    try:
        with _where(policy, _argv(root, args, policy, bare), root, index, bare) as command:
            done = subprocess.run(
                command.argv,
                cwd=root,
                capture_output=True,
                timeout=TIMEOUT_S,
                check=False,
                env=dict(command.env),
                pass_fds=command.pass_fds,
                **io,
            )
    except (OSError, subprocess.TimeoutExpired) as error:
        raise GitError(f"git {' '.join(args)}: {error}") from error
    if check and done.returncode != 0:
        raise GitError(f"git {' '.join(args)} failed: {said(done)}")
    return done


def run_git(
    root: Path,
    *args: str,
    policy: GitPolicy = PLAIN,
    check: bool = True,
    input_text: str | None = None,
    index: Path | None = None,
    bare: bool = False,
) -> subprocess.CompletedProcess[str]:
    """``git ARGS`` in ``root`` with :func:`git_options` and :func:`git_environment`; raises
    :class:`GitError` when it cannot run or (with ``check``) fails. ``index``: an index file
    of ralph's own to use instead of the worktree's (``GIT_INDEX_FILE``). ``bare``: ``root``
    is a bare repository's folder (``GIT_DIR``, with no work tree), whatever lies around it."""
    stdin = subprocess.DEVNULL if input_text is None else None
    done: subprocess.CompletedProcess[str] = _run(
        root, args, policy, check, index, bare, text=True, input=input_text, stdin=stdin
    )
    return done


def git_out(
    root: Path,
    *args: str,
    check: bool = True,
    error: type[PipelineError] = GitError,
    bare: bool = False,
) -> str:
    """What ``git ARGS`` in ``root`` printed (:func:`run_git`, ``bare`` as there). A failure
    raises ``error`` (a caller's own kind, such as ``WorktreeError``, so its command reports
    it as its own) naming the command and what git said."""
    try:
        return run_git(root, *args, check=check, bare=bare).stdout
    except GitError as failure:
        if error is GitError:
            raise
        raise error(f"git {' '.join(args[:2])} failed: {failure}") from failure


def run_git_bytes(
    root: Path,
    *args: str,
    policy: GitPolicy = PLAIN,
    check: bool = True,
    input_bytes: bytes | None = None,
    index: Path | None = None,
) -> subprocess.CompletedProcess[bytes]:
    """:func:`run_git` with bytes in and out: for file contents (``cat-file``), which may be
    any bytes, and for path listings, whose paths need not be UTF-8."""
    stdin = subprocess.DEVNULL if input_bytes is None else None
    done: subprocess.CompletedProcess[bytes] = _run(
        root, args, policy, check, index, input=input_bytes, stdin=stdin
    )
    return done


def resolved(root: Path, revision: str, policy: GitPolicy = PLAIN) -> str | None:
    """The object ``revision`` names in ``root``'s repository (``rev-parse --verify``), or
    None when it names none (no such branch, no commit yet)."""
    done = run_git(root, "rev-parse", "--verify", "--quiet", revision, policy=policy, check=False)
    return (done.stdout.strip() or None) if done.returncode == 0 else None


def revision(root: Path, ref: str) -> str | None:
    """The commit ``ref`` names in the repository of ``root``, or None when it names none."""
    return resolved(root, f"{ref}^{{commit}}")


def holds(root: Path, tip: str, commit: str) -> bool:
    """Whether ``tip``'s history holds ``commit`` (by its id)."""
    done = run_git(root, "merge-base", "--is-ancestor", commit, tip, check=False)
    return done.returncode == 0


def said(done: subprocess.CompletedProcess[str] | subprocess.CompletedProcess[bytes]) -> str:
    """What git printed, on one line (its first line usually names the cause)."""
    printed = done.stderr or done.stdout
    if isinstance(printed, bytes):
        # Only the start is shown, so a blob on stdout is not decoded whole.
        printed = printed[:2000].decode("utf-8", "replace")
    text = " ".join(printed.split())
    return text[:500] if text else f"exit status {done.returncode}"


EFFECT_TRAILER = "Ralph-Effect"
"""The commit trailer naming the effect a commit was made for."""


def effect_commits(
    git: Callable[..., subprocess.CompletedProcess[str]], prefix: str
) -> list[tuple[str, str]]:
    """(sha, effect id) of each effect id starting with ``prefix`` that a commit on HEAD
    carries in its ``Ralph-Effect`` trailer (as git parses the trailer, not a message merely
    quoting it), newest first, read by ``git`` (:func:`run_git` on the repository)."""
    shown = git(
        "log",
        "HEAD",
        "--fixed-strings",
        f"--grep={EFFECT_TRAILER}: {prefix}",
        f"--format=%H %(trailers:key={EFFECT_TRAILER},valueonly,separator=%x20)",
    ).stdout
    return [
        (sha, effect)
        for sha, *effects in (line.split() for line in shown.splitlines() if line.strip())
        for effect in effects
        if effect.startswith(prefix)
    ]


_SECTION = re.compile(r'^\s*\[\s*(filter|merge)\s*(?:"((?:[^"\\]|\\.)*)"|\.([^\]\s]+))\s*\]', re.I)
_INCLUDE = re.compile(r"^\s*path\s*=\s*(.+?)\s*$", re.I)
_MAX_INCLUDES = 10


def configured_drivers(config_files: tuple[Path, ...]) -> tuple[tuple[str, str], ...]:
    """(kind, name) of every ``[filter "NAME"]`` and ``[merge "NAME"]`` section in
    ``config_files`` and the files they include (read in Python: no git process)."""
    found: dict[tuple[str, str], None] = {}
    pending = list(config_files)
    seen: set[Path] = set()
    while pending and len(seen) < _MAX_INCLUDES + len(config_files):
        path = pending.pop()
        if path in seen:
            continue
        seen.add(path)
        try:
            text = path.read_text("utf-8", "replace")
        except OSError:
            continue
        for line in text.splitlines():
            match = _SECTION.match(line)
            if match:
                name = match.group(2) if match.group(2) is not None else match.group(3)
                found[(match.group(1).lower(), name.replace('\\"', '"').replace("\\\\", "\\"))] = (
                    None
                )
                continue
            include = _INCLUDE.match(line)
            if include:
                # Any ``path =`` line may be an include: following one too many costs nothing.
                target = Path(os.path.expanduser(include.group(1).strip('"')))
                pending.append(target if target.is_absolute() else path.parent / target)
    return tuple(sorted(found))


def repository_drivers(root: Path) -> tuple[tuple[str, str], ...]:
    """:func:`configured_drivers` of the repository ``root`` lies in (its own config files,
    a worktree's included); none outside a repository."""
    dirs = git_dirs(root)
    if dirs is None:
        return ()
    git_dir, common = dirs
    files = (common / "config", common / "config.worktree", git_dir / "config.worktree")
    return configured_drivers(tuple(dict.fromkeys(files)))


_GLOB_SPECIAL = re.compile(r"([*?\[\]\\])")


def outside_pathspec(path: str) -> tuple[str, ...]:
    """Pathspecs that keep ``path`` (a file or a folder, relative to the top) and everything
    under it out of a ``git add``.

    A plain ``:(exclude)`` of a path git already ignores makes ``git add`` fail ("paths are
    ignored"), while one git does not ignore must be named. A glob whose first character is
    bracketed has no literal prefix, which git does not hold against an ignored path: so the
    same pathspec works whatever the exclude files say.
    """
    first, rest = path[0], _GLOB_SPECIAL.sub(r"\\\1", path[1:])
    head = f"[\\{first}]" if first in "!^]\\[" else f"[{first}]"
    pattern = head + rest
    return (f":(exclude,glob){pattern}", f":(exclude,glob){pattern}/**")
