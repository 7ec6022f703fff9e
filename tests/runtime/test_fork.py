"""``ralph fork RUN --at N``: a new run from the first facts of another, in a git worktree of
its own at the commit recorded by then, that goes on to its own end; the original run, its
store and its work tree are untouched; bad requests exit 2 and make nothing."""

from __future__ import annotations

import hashlib
import json
import subprocess
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pipeline.app.workspace import fork_point
from pipeline.core.effects import MaterializePrompt
from pipeline.events import CommitCreated, InvocationStarted, IterationStatus, Role
from pipeline.handlers.runtime import WorkspaceLayout
from pipeline.orchestration import next_effect
from pipeline.reducers import fold
from tests.runtime.workspace import git, ralph
from tests.support import scripted_run

PARTIAL, DONE = IterationStatus.PARTIAL, IterationStatus.COMPLETED
EVENTS = scripted_run({"iteration status": [PARTIAL, PARTIAL, DONE]}).events
"""A run of three development iterations, each committed."""


@settings(max_examples=40, deadline=None)
@given(at=st.integers(1, len(EVENTS)))
def test_a_fork_point_is_a_prompt_about_to_be_made_on_committed_work(at: int) -> None:
    point = fork_point(list(EVENTS), at)
    assert 0 <= point <= at
    if point == 0:
        return
    assert isinstance(next_effect(fold(EVENTS[:point])), MaterializePrompt)
    last_commit = max(
        (i for i, e in enumerate(EVENTS[:point]) if isinstance(e, CommitCreated)), default=-1
    )
    since = EVENTS[last_commit + 1 : point]
    assert not [e for e in since if isinstance(e, InvocationStarted) and e.role is Role.DEVELOPER]
    # No later point up to ``at`` would do: the fork goes back no further than it must.
    assert fork_point(list(EVENTS), point) == point


def _facts(root: Path) -> list[dict[str, object]]:
    shown = ralph("events", "--format", "jsonl", cwd=root)
    assert shown.returncode == 0, shown.stderr
    return [json.loads(line) for line in shown.stdout.splitlines()]


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One demo run (commits, failures, a review) the tests fork; none changes it."""
    base = tmp_path_factory.mktemp("fork")
    made = ralph("demo", "demo", "--quiet", cwd=base)
    assert made.returncode == 0, made.stderr
    return base / "demo"


@pytest.mark.slow
def test_a_fork_goes_on_from_a_commit_to_its_own_end_and_leaves_the_original_alone(
    demo: Path, tmp_path: Path
) -> None:
    root = demo
    source = _facts(root)
    before = hashlib.sha256(json.dumps(source).encode()).hexdigest()
    head = git(root, "rev-parse", "HEAD")
    first_commit = next(i for i, f in enumerate(source, 1) if f["type"] == "commit.commit_created")
    asked = first_commit + 4
    target = tmp_path / "fork"
    forked = ralph(
        "fork",
        "--at",
        str(asked),
        "--to",
        str(target),
        "-p",
        "Also trim dots.",
        # The demo's developer chain is ["absent", "scripted"]: the fork's goes to work first.
        "--agent",
        "scripted",
        "--model",
        "demo-model-fork",
        cwd=root,
    )
    assert forked.returncode == 0, forked.stderr
    point = int(forked.stdout.split("after fact ")[1].split()[0])
    assert first_commit < point <= asked
    copied = _facts(target)
    fork_id = copied[0]["run_id"]
    assert fork_id != source[0]["run_id"]
    assert copied[1:point] == source[1:point]
    marker = copied[point]
    assert marker["type"] == "lifecycle.run_forked"
    assert (marker["source_run"], marker["at_sequence"]) == (source[0]["run_id"], point)
    assert marker["commit"] == source[first_commit - 1]["sha"]
    assert (marker["agent"], marker["model"]) == ("scripted", "demo-model-fork")
    new_prompt = WorkspaceLayout(root=target).saved_prompt(str(fork_id)).read_bytes()
    assert new_prompt == b"Also trim dots.\n"
    assert marker["prompt_digest"] == hashlib.sha256(new_prompt).hexdigest()
    assert git(target, "rev-parse", "HEAD") == marker["commit"]
    assert git(target, "rev-parse", "--abbrev-ref", "HEAD") == f"ralph/fork-{fork_id}"
    verified = ralph("replay", "--verify", cwd=target)
    assert verified.returncode == 0, verified.stdout + verified.stderr
    resumed = ralph("resume", "--plain", cwd=target)
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    ended = _facts(target)
    assert ended[-1]["type"] == "lifecycle.run_completed"
    # The fork's developer got the fork's prompt.
    prompt = (target / ".agent" / "prompts" / "development.md").read_text()
    assert "Also trim dots." in prompt
    # Every invocation of the fork ran its agent first, asking for its model.
    started = [f for f in ended[point:] if f["type"] == "agent.invocation_started"]
    assert started
    assert {(f["agent"], f["model"]) for f in started} == {("scripted", "demo-model-fork")}
    before_fork = [f for f in ended[:point] if f["type"] == "agent.invocation_started"]
    assert "absent" in {f["agent"] for f in before_fork}  # the source's developer chain
    status = ralph("status", cwd=target)
    assert "agent scripted first, model demo-model-fork" in status.stdout, status.stdout
    # The original: its log, its HEAD.
    assert hashlib.sha256(json.dumps(_facts(root)).encode()).hexdigest() == before
    assert git(root, "rev-parse", "HEAD") == head
    # A fork of the fork: its log inherits the commits of both runs it came through.
    again_at = next(i for i, f in enumerate(ended, 1) if f["type"] == "commit.commit_created")
    second = tmp_path / "fork-of-fork"
    refork = ralph("fork", "--at", str(len(ended) - 1), "--to", str(second), cwd=target)
    assert refork.returncode == 0, refork.stderr
    assert again_at < int(refork.stdout.split("after fact ")[1].split()[0])
    checked = ralph("replay", "--verify", cwd=second)
    assert checked.returncode == 0, checked.stdout + checked.stderr


@pytest.mark.slow
def test_a_bad_fork_is_refused_and_makes_nothing(demo: Path, tmp_path: Path) -> None:
    root = demo
    worktrees = git(root, "worktree", "list")
    total = len(_facts(root))
    taken = tmp_path / "taken"
    taken.mkdir()
    for args, said in (
        (["--at", str(total + 1)], f"holds {total} facts"),
        (["--at", "2"], "made no prompt by fact 2"),
        (["--at", "20", "--to", str(taken)], "exists: name another folder"),
        (["--at", "20", "nobody"], "nobody"),
        (["--at", "20", "-p", "  "], "the prompt is empty"),
        (["--at", "20", "--agent", "nobody"], "configures no such agent (it has: absent, "),
        (["--at", "20", "--model", "-rf"], "is not a model name"),
        (["--at", "20", "--model", "two words"], "is not a model name"),
    ):
        refused = ralph("fork", *args, cwd=root)
        assert refused.returncode == 2, (args, refused.stdout, refused.stderr)
        assert said in refused.stderr, (args, refused.stderr)
    assert git(root, "worktree", "list") == worktrees
    assert list(taken.iterdir()) == []


@pytest.mark.slow
def test_a_run_is_forked_from_its_page(demo: Path) -> None:
    from starlette.testclient import TestClient

    from pipeline.app.cli._serve_app import make_app
    from pipeline.app.cli._serve_guard import Access

    access = Access(secret="fork-page-token-0123456789", remote=False)
    store = WorkspaceLayout(root=demo).store
    root = f"http://127.0.0.1:8765{access.root}"  # the address ralph serve prints
    client = TestClient(make_app(str(store), demo, access), base_url=root)
    run_id = _facts(demo)[0]["run_id"]
    page = client.get(f"/runs/{run_id}").text
    assert f"action='../runs/{run_id}/fork'" in page, "an ended run can be forked"
    url = f"/runs/{run_id}/fork"
    assert client.post(url, data={"at": "40"}).status_code == 403
    bad = client.post(url, data={"at": "many", "csrf": access.form_token})
    assert bad.status_code == 400
    unknown = client.post(url, data={"at": "40", "agent": "nobody", "csrf": access.form_token})
    assert unknown.status_code == 400
    assert "configures no such agent" in unknown.text
    done = client.post(url, data={"at": "40", "csrf": access.form_token}, follow_redirects=False)
    assert done.status_code == 303, done.text
    fork_id = done.headers["location"].split("said=forked%3A")[1]
    target = demo.parent / f"{demo.name}-fork-{fork_id}"
    assert (target / ".git").is_file()
    said = client.get(done.headers["location"]).text
    assert f"ralph resume {fork_id} -C {target}" in said


@pytest.mark.slow
def test_a_fork_that_fails_half_way_leaves_nothing(demo: Path, tmp_path: Path) -> None:
    """The source's events file is gone (the copy fails after the worktree was added): the
    fork is refused, and neither its worktree nor its branch is left."""
    run_id = str(_facts(demo)[0]["run_id"])
    events_file = WorkspaceLayout(root=demo).events_file(run_id)
    kept = events_file.read_bytes()
    branches = git(demo, "branch", "--list", "ralph/fork-*")
    events_file.unlink()
    try:
        target = tmp_path / "half"
        refused = ralph("fork", "--at", "40", "--to", str(target), cwd=demo)
    finally:
        events_file.write_bytes(kept)
    assert refused.returncode == 2, refused.stdout + refused.stderr
    assert "nothing of it is left" in refused.stderr
    assert not target.exists()
    assert git(demo, "branch", "--list", "ralph/fork-*") == branches


def test_the_files_the_configuration_names_are_carried_and_nothing_outside(
    tmp_path: Path,
) -> None:
    """A fork copies the untracked files its ``ralph.toml`` names (a hat's schema, a gate's
    script, an agent's script), and never a command's word that is no file of the workspace,
    a path outside it, or a symlink."""
    from pipeline.app.workspace._carry import _named_files, _untracked_named

    root = tmp_path / "ws"
    (root / "schemas").mkdir(parents=True)
    (root / "schemas" / "review.json").write_text("{}")
    (root / "gate.sh").write_text("exit 0\n")
    (root / "agent.py").write_text("")
    (tmp_path / "outside.sh").write_text("")
    (root / "link.sh").symlink_to(tmp_path / "outside.sh")
    (root / "ralph.toml").write_text(
        """
[agents.mine]
command = ["python", "agent.py", "--flag"]
[chains]
default = ["mine"]
[hats.reviewer]
response_schema = "schemas/review.json"
[[gates]]
name = "g"
argv = ["sh", "gate.sh", "../outside.sh", "link.sh", "/etc/passwd"]
"""
    )
    assert sorted(_named_files(root.resolve())) == ["agent.py", "gate.sh", "schemas/review.json"]
    # Carried are those git calls untracked: not a tracked one, nor an ignored one.
    subprocess.run(["git", "init", "-q"], cwd=root, check=True)
    (root / ".gitignore").write_text("agent.py\n")
    subprocess.run(["git", "add", "gate.sh"], cwd=root, check=True)
    assert _untracked_named(root.resolve()) == ["schemas/review.json"]
