"""``ralph serve`` in a real headless browser (Debian's chromium, driven by Playwright) while a
real run goes on: the agent asks a person a question, the page shows it, the question is
answered from the page and the run goes on to the end while the page follows it live (facts
arrive without a reload), and the slider shows the state at the point it is set to."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from pipeline.handlers.runtime import WorkspaceLayout
from tests.chromium import CHROMIUM
from tests.cli.serving import free_port, start_serve
from tests.runtime.workspace import (
    FINISH_EVERYTHING,
    PYTHON,
    make_workspace,
    scripted,
    start_ralph,
)

pytestmark = pytest.mark.slow

TOKEN = "browser-test-token-0123456789"

ASKING_DEVELOPER = f"""
set -e
mkdir -p .agent/out
if [ ! -e .ralph/asked ]; then
    : > .ralph/asked
    {PYTHON} -m pipeline.cli emit human.interact 'Tabs or spaces?'
fi
printf 'completed\\ndone' > .agent/out/status
echo done >> work.txt
"""
"""A developer that asks a person a question once, and does its work."""


@pytest.mark.skipif(CHROMIUM is None, reason="no chromium (CI installs it)")
def test_a_question_is_answered_from_the_page_which_follows_the_run_to_its_end(
    tmp_path: Path,
) -> None:
    from playwright.sync_api import sync_playwright

    root = make_workspace(
        tmp_path / "ws",
        scripts={"s.toml": FINISH_EVERYTHING},
        agents={"main": scripted("s.toml"), "dev": ["sh", "-c", ASKING_DEVELOPER]},
        chains='default = ["main"]\ndeveloper = ["dev"]',
        extra="[loop]\nhuman_timeout_s = 300\n",
    )
    port = free_port()
    run = start_ralph("run", "--plain", cwd=root)
    store = WorkspaceLayout(root).store
    deadline = time.monotonic() + 60
    while not store.is_file():  # ralph serve wants a store to serve
        assert run.poll() is None, run.communicate()
        assert time.monotonic() < deadline, "the run never made its store"
        time.sleep(0.05)
    serve = None
    try:
        serve = start_serve("-C", str(root), "--token", TOKEN, port=port)
        with sync_playwright() as driver:
            browser = driver.chromium.launch(
                executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu"]
            )
            page = browser.new_page()
            page.goto(f"http://127.0.0.1:{port}/?token={TOKEN}")
            assert "token=" not in page.url, "the token left the address"
            page.locator("a[href^='/runs/']").first.click()
            # The question is asked once the developer has exited: until then, look again.
            deadline = time.monotonic() + 60
            while not page.locator("form[action$='/respond']").count():
                assert time.monotonic() < deadline, "the page never showed the question"
                assert run.poll() is None, run.communicate()
                time.sleep(0.3)
                page.reload()
            assert "Tabs or spaces?" in page.content()
            form = page.locator("form[action$='/respond']")
            form.locator("textarea[name='text']").fill("Spaces, four of them.")
            form.locator("button").click()
            page.wait_for_load_state()
            page.wait_for_selector("p.notice")
            assert "Answered: the run goes on." in page.locator("p.notice").inner_text()
            before = page.locator("#facts li").count()
            # No reload from here on: the facts arrive by themselves until the run ends.
            page.wait_for_selector("body[data-ended='true']", timeout=60_000)
            after = page.locator("#facts li").count()
            assert after > before, "the page followed the run"
            total = int(page.locator("#total").inner_text())
            assert total == after == int(page.locator("#at").get_attribute("max") or 0)
            # The drawing was fetched again after the last fact: a bar per agent, the run's
            # path through the phases to complete in red.
            page.wait_for_selector(f"body[data-drawn='{total}']", timeout=30_000)
            agents = page.locator("#agents tbody tr").count()
            assert page.locator("#timeline .bar").count() == agents > 0
            reached = page.locator("svg.graph g[data-visited='true']").all()
            assert "complete" in {g.get_attribute("data-node") for g in reached}
            page.locator("#at").fill("5")
            page.wait_for_selector("body[data-shown='5']")
            rows = dict(
                zip(
                    page.locator("#state th").all_inner_texts(),
                    page.locator("#state td").all_inner_texts(),
                    strict=True,
                )
            )
            assert rows["events folded"] == "5"
            assert rows["phase"] == "planning"
            page.screenshot(path=str(tmp_path / "run-page.png"), full_page=True)
            browser.close()
        assert run.wait(timeout=60) == 0, run.communicate()
    finally:
        for process in (serve, run):
            if process is not None and process.poll() is None:
                process.terminate()
                process.wait(timeout=30)
    assert (tmp_path / "run-page.png").stat().st_size > 10_000
