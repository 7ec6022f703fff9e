"""Headless Chromium for the report tests: where it is, and a page's DOM as it renders it
(scripts run, so a test can see that none of an agent's did)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
"""Debian's chromium (``.ci/run`` installs it); None where it is missing."""


def dump_dom(page: Path | str) -> str:
    """The DOM of ``page`` (a file, or a URL) after Chromium loaded it and ran its scripts
    (3 s of virtual time)."""
    assert CHROMIUM is not None, "CI must have chromium: .ci/run installs it"
    dumped = subprocess.run(
        [
            CHROMIUM,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            "--virtual-time-budget=3000",
            "--dump-dom",
            page if isinstance(page, str) else page.as_uri(),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert dumped.returncode == 0, dumped.stderr
    return dumped.stdout
