"""The Markdown report shows agent text as text: a failure message carrying HTML (an ``<svg
onload>``, an ``<img onerror>``) and a Markdown link is rendered (HTML allowed, as many
renderers do) and loaded in headless Chromium, and runs nothing."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from markdown_it import MarkdownIt

from tests.chromium import CHROMIUM, dump_dom
from tests.runtime.workspace import RALPH, ROOT, make_workspace

AGENT = """#!/bin/sh
svg='<svg onload="document.body.dataset.ran=1"></svg>'
img='<img src=x onerror="document.body.dataset.ran=2">'
link='[docs](javascript:document.body.dataset.ran=3)'
echo "$svg$img $link" >&2
exit 1
"""


@pytest.mark.skipif(
    CHROMIUM is None and not os.environ.get("CI"),
    reason="no chromium here (.ci/run installs Debian's chromium)",
)
def test_agent_html_in_the_markdown_report_runs_nothing_when_rendered(tmp_path: Path) -> None:
    """The report's Markdown, rendered with raw HTML allowed and loaded in Chromium: no
    handler of the agent's ran (the body has no mark), no element or link of the agent's is in
    the page, and its text is there to read."""
    assert CHROMIUM is not None, "CI must have chromium: .ci/run installs it"
    root = tmp_path / "ws"
    root.mkdir()
    agent = root.parent / "agent.sh"  # outside the repository: not a change to commit
    agent.write_text(AGENT)
    agent.chmod(0o755)
    make_workspace(
        root, scripts={}, agents={"main": [str(agent)]}, budgets="max_retries_per_agent = 0"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    subprocess.run([*RALPH, "run", "--quiet"], cwd=root, env=env, timeout=120, check=False)
    made = subprocess.run(
        [*RALPH, "report", "--markdown", "-"], cwd=root, env=env, capture_output=True, text=True
    )
    assert made.returncode == 0, made.stderr
    assert "onerror" in made.stdout  # the agent's text is in the report
    body = MarkdownIt("commonmark", {"html": True}).enable("table").render(made.stdout)
    page = tmp_path / "report.html"
    page.write_text(
        f"<!doctype html><html><head><meta charset=utf-8></head><body>{body}</body></html>"
    )
    dom = dump_dom(page)
    assert "data-ran" not in dom
    assert "<svg" not in dom
    assert "<img" not in dom
    assert 'href="javascript:' not in dom
    assert "&lt;svg onload=" in dom
