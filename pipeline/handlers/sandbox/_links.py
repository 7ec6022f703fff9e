"""Keeping the person's own links among a CLI folder's read-only entries (I/O).

A CLI's folder (``~/.claude``, ``~/.codex``, ...) is the person's, bound writable; its entries
that hold code the person's own CLI obeys later (``settings.json``, ``commands/``, ...) are
bound read-only on top. An entry that is a link is not bound (bwrap would follow it at both
ends: :func:`~pipeline.handlers.sandbox._gather.linked_paths`), so a person's own link there
(``settings.json -> ~/dotfiles/claude.json``) lies in a folder the agent can write: it could
remove the link and write a ``settings.json`` with a hook the person's next, unsandboxed
session runs. So each such link is noted just before the sandbox starts and put back, as the
same link, once the sandbox has ended (its pid namespace, and so every process the agent
started, ends with it).

The note is also kept in ralph's state folder (hidden in the sandbox) while the process runs:
should ralph be killed meanwhile, the next sandboxed process in that workspace puts the links
back before anything else. Only a link there as a process starts is noted: a link an agent
makes where the person had a file or nothing cannot happen (those are bound, or made empty
first), and one it made where the person had a link is replaced by the person's.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import stat
from collections.abc import Mapping
from pathlib import Path

from pipeline.core.sandbox import PresetPaths

__all__ = [
    "LINKS_RECORD",
    "forget_links",
    "keep_record",
    "note_links",
    "put_back",
    "recorded_links",
]

LINKS_RECORD = "cli-links.json"
"""The file in ralph's state folder noting the person's links while a sandboxed process runs."""


def note_links(preset: PresetPaths) -> dict[str, str]:
    """The read-only entries of ``preset``'s writable folders that are links now, each with
    the text it points at (never followed)."""
    found: dict[str, str] = {}
    for path in preset.read_only:
        if os.path.dirname(path) not in preset.writable:
            continue  # under the sandbox's own empty $HOME: nothing an agent can change
        with contextlib.suppress(OSError):
            if stat.S_ISLNK(os.lstat(path).st_mode):
                found[path] = os.readlink(path)
    return found


def _same(path: str, target: str) -> bool:
    try:
        return stat.S_ISLNK(os.lstat(path).st_mode) and os.readlink(path) == target
    except OSError:
        return False


def put_back(links: Mapping[str, str]) -> tuple[str, ...]:
    """Make each of ``links`` the same link again where something else stands now (a file, a
    folder, another link: removed without following a link, a folder with what it holds);
    the paths put back."""
    done: list[str] = []
    for path, target in links.items():
        if _same(path, target):
            continue
        with contextlib.suppress(FileNotFoundError):
            if stat.S_ISDIR(os.lstat(path).st_mode):
                shutil.rmtree(path)  # follows no link inside
            else:
                os.unlink(path)
        os.symlink(target, path)
        done.append(path)
    return tuple(done)


def recorded_links(record: Path) -> dict[str, str]:
    """The links a process that never ended under ralph's eye noted (none: no record)."""
    try:
        data = json.loads(record.read_bytes())
    except FileNotFoundError:
        return {}
    except (OSError, ValueError):
        return {}  # a half-written record: written before its process started, so none ran
    if not isinstance(data, dict):
        return {}
    return {
        k: v
        for k, v in data.items()
        if isinstance(k, str) and isinstance(v, str) and os.path.isabs(k)
    }


def keep_record(record: Path, links: Mapping[str, str]) -> None:
    """Note ``links`` in ``record`` (replaced whole, never half-written), or drop it when
    there are none."""
    if not links:
        forget_links(record)
        return
    record.parent.mkdir(parents=True, exist_ok=True)
    partial = record.with_name(f".{record.name}.{os.getpid()}")
    partial.write_text(json.dumps(dict(links)), "utf-8")
    os.replace(partial, record)


def forget_links(record: Path) -> None:
    """Drop ``record``: the process it was kept for has ended and its links are back."""
    with contextlib.suppress(FileNotFoundError):
        record.unlink()
