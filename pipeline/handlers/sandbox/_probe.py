"""Whether this machine can run the sandbox: bubblewrap found, and a sandbox with every
namespace, no capability and ralph's death as its own actually started (I/O).

A probe runs ``bwrap`` twice (its version, then ``true`` in the sandbox the mount plan's
mandatory flags make) and says what it found in words a person can act on: the program
missing, user namespaces refused (with bwrap's own message), or on. It never weakens the
sandbox to make it start.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Mapping
from typing import Final, final

from attrs import frozen

from pipeline.core.sandbox import MANDATORY_FLAGS

__all__ = ["INSTALL_HINT", "Probe", "bare_sandbox", "probe"]

INSTALL_HINT: Final = "install bubblewrap (apt-get install bubblewrap)"
"""How to get the sandbox on a machine without it (said with every reason it is off)."""

_TIMEOUT_S: Final = 10.0


@final
@frozen(kw_only=True)
class Probe:
    """What the probe found: ``program`` (bwrap's path) and ``version`` when the sandbox
    starts, else ``reason`` (why not, and how to fix it)."""

    program: str | None
    version: str | None
    reason: str | None
    uid: int | None = None
    """The uid inside: given when ralph runs as root (mapped from 0 outside), else None."""

    @property
    def works(self) -> bool:
        """Whether sandboxed processes can start."""
        return self.reason is None and self.program is not None

    @property
    def backend(self) -> str:
        """``bubblewrap 0.8.0``, or ``bubblewrap`` when the version is unknown."""
        return f"bubblewrap {self.version}" if self.version else "bubblewrap"


def bare_sandbox(program: str, uid: int | None) -> list[str]:
    """bwrap ``program``'s arguments for the barest sandbox: the mandatory flags, ``uid`` inside
    (None: the caller's), the host's root read-only, a fresh ``/dev`` and ``/proc``."""
    ids = [] if uid is None else ["--uid", str(uid), "--gid", str(uid)]
    system = ["--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"]
    return [program, *MANDATORY_FLAGS, *ids, *system]


def _run(argv: list[str]) -> tuple[int, str]:
    try:
        done = subprocess.run(
            argv,
            capture_output=True,
            timeout=_TIMEOUT_S,
            stdin=subprocess.DEVNULL,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return 1, f"{argv[0]} did not answer within {_TIMEOUT_S:.0f} s"
    except OSError as error:
        return 1, str(error)
    text = (done.stderr or done.stdout).decode("utf-8", "replace").strip()
    return done.returncode, " ".join(text.split())[:300]


def probe(environ: Mapping[str, str], uid: int) -> Probe:
    """Probe the sandbox for processes started with ``environ`` (its ``PATH`` finds bwrap);
    ``uid`` is the uid inside when ralph runs as root."""
    program = shutil.which("bwrap", path=environ.get("PATH", os.defpath))
    if program is None:
        return Probe(program=None, version=None, reason=f"bwrap not found on PATH: {INSTALL_HINT}")
    code, text = _run([program, "--version"])
    version = text.removeprefix("bubblewrap ").strip() if code == 0 else None
    inside = uid if os.geteuid() == 0 else None
    code, text = _run([*bare_sandbox(program, inside), "--", "true"])
    said = text or f"exit status {code}"
    reason = None if code == 0 else f"bwrap cannot start a sandbox here: {said}"
    return Probe(program=program, version=version, reason=reason, uid=inside)
