"""The reaper's start stays cheap: it runs before every command ralph starts, so what it
imports is on the path of every agent, gate and hook. Real interpreters throughout."""

from __future__ import annotations

import subprocess
import sys

import pytest

from pipeline.handlers.agents import _reaper

HEAVY = ("signal", "contextlib", "ctypes", "collections", "enum", "typing", "functools")
"""Modules the reaper does without: together they doubled its start (issue 48)."""


@pytest.mark.skipif(not _reaper.reaper_usable(), reason="the reaper runs on Linux only")
def test_the_reaper_starts_without_the_heavy_modules() -> None:
    """Imported as its boot imports it, and having made its ``prctl`` calls, the reaper has
    loaded none of the standard library's heavy modules (``signal``'s enums, ``contextlib``,
    ``ctypes``'s wrappers)."""
    argv = _reaper.reaper_argv(0, {}, ["true"])
    boot, folder = argv[argv.index("-c") + 1], argv[argv.index("-c") + 2]
    probe = boot.replace("_reaper.boot()", "") + (
        "_reaper._prctl(_reaper._PR_SET_PDEATHSIG, 0); print(' '.join(sys.modules))"
    )
    done = subprocess.run(
        [sys.executable, "-I", "-S", "-c", probe, folder],
        capture_output=True,
        text=True,
        check=True,
    )
    loaded = set(done.stdout.split())
    assert "_reaper" in loaded
    assert "_ctypes" in loaded
    assert loaded.isdisjoint(HEAVY), sorted(loaded & set(HEAVY))


PDEATHSIG_READ_BACK = """
import ctypes, sys
from pipeline.handlers.agents import _reaper
assert _reaper._prctl(_reaper._PR_SET_PDEATHSIG, 10)
got = ctypes.c_int(-1)
assert ctypes.CDLL(None).prctl(2, ctypes.byref(got), 0, 0, 0) == 0  # PR_GET_PDEATHSIG
print(got.value)
"""


@pytest.mark.skipif(not _reaper.reaper_usable(), reason="the reaper runs on Linux only")
def test_the_reaper_reaches_prctl_without_ctypes() -> None:
    """The reaper's ``prctl`` through ``_ctypes`` takes effect: a process sets its
    parent-death signal with it and reads it back with ``ctypes``."""
    done = subprocess.run(
        [sys.executable, "-c", PDEATHSIG_READ_BACK], capture_output=True, text=True, check=True
    )
    assert done.stdout.strip() == "10"
