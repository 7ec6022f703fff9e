"""The git handler on real repositories: commits with their effect trailer, skips, rebases."""

from __future__ import annotations

import subprocess
from pathlib import Path

from pipeline.core.effects import AbortRebase, CreateCommit, EffectId, Rebase
from pipeline.core.state import SpendLine
from pipeline.engine.simulation import fake_clock
from pipeline.events import (
    CommitCreated,
    CommitSkipped,
    RebaseAborted,
    RebaseConflicted,
    RebaseStarted,
    RebaseSucceeded,
    WorkspaceErrorKind,
    WorkspaceIoError,
)
from pipeline.handlers.runtime import (
    COST_TRAILER,
    EFFECT_TRAILER,
    MODEL_TRAILER,
    GitHandler,
    ensure_excluded,
)
from tests.runtime.workspace import git, make_workspace, scripted

_NONE = SpendLine()
"""No usage reported since the last commit."""


def handler(tmp_path: Path) -> tuple[Path, GitHandler]:
    root = make_workspace(tmp_path / "repo", scripts={}, agents={"a": ["true"]})
    ensure_excluded(root)
    return root, GitHandler(root=root, clock=fake_clock())


def test_a_commit_carries_its_effect_trailer_and_leaves_ralphs_files_out(tmp_path: Path) -> None:
    """All changes are committed with the message; .ralph/ and .agent/ never are."""
    root, git_handler = handler(tmp_path)
    (root / "new.py").write_text("x = 1\n")
    (root / ".agent").mkdir()
    (root / ".agent" / "PLAN.md").write_text("plan")
    facts = git_handler.commit(
        CreateCommit(
            effect_id=EffectId("run:7"), message="Add x", may_exist=False, spent=_NONE, models=()
        )
    )
    assert len(facts) == 1
    assert isinstance(facts[0], CommitCreated)
    assert facts[0].sha == git(root, "rev-parse", "HEAD")
    assert facts[0].branch == "main"
    assert git(root, "log", "-1", "--format=%B").splitlines() == [
        "Add x",
        "",
        f"{EFFECT_TRAILER}: run:7",
        f"{MODEL_TRAILER}: unknown",
        f"{COST_TRAILER}: unknown",
    ]
    assert git(root, "show", "--name-only", "--format=", "HEAD") == "new.py"
    assert git(root, "status", "--porcelain") == ""


def _trailers(root: Path) -> list[str]:
    """The trailers of HEAD's message, as git itself parses them."""
    message = git(root, "log", "-1", "--format=%B")
    parsed = subprocess.run(
        ["git", "interpret-trailers", "--parse"],
        cwd=root,
        input=message,
        check=True,
        capture_output=True,
        text=True,
    )
    return parsed.stdout.splitlines()


def test_a_commit_carries_the_models_and_known_cost_since_the_last_commit(
    tmp_path: Path,
) -> None:
    """The effect's figures become ``Ralph-Model`` and ``Ralph-Cost`` trailers that git
    reads as trailers; invocations of unknown cost are named, never counted as $0."""
    root, git_handler = handler(tmp_path)
    (root / "a.txt").write_text("a")
    spent = SpendLine(invocations=2, cost_usd=0.0123, input_tokens=10, output_tokens=5)
    effect = CreateCommit(
        effect_id=EffectId("run:4"),
        message="Add a",
        may_exist=False,
        spent=spent,
        models=("sonnet", "haiku"),
    )
    assert isinstance(git_handler.commit(effect)[0], CommitCreated)
    assert _trailers(root) == [
        f"{EFFECT_TRAILER}: run:4",
        f"{MODEL_TRAILER}: sonnet, haiku",
        f"{COST_TRAILER}: $0.0123",
    ]
    (root / "b.txt").write_text("b")
    partly = SpendLine(invocations=3, cost_usd=0.42, unknown_cost=2)
    git_handler.commit(
        CreateCommit(
            effect_id=EffectId("run:8"),
            message="Add b",
            may_exist=False,
            spent=partly,
            models=("gpt", ""),
        )
    )
    assert _trailers(root)[1:] == [
        f"{MODEL_TRAILER}: gpt, unknown",
        f"{COST_TRAILER}: $0.4200 + 2 of unknown cost",
    ]
    (root / "c.txt").write_text("c")
    unknown = SpendLine(invocations=1, unknown_cost=1)
    git_handler.commit(
        CreateCommit(
            effect_id=EffectId("run:9"),
            message="Add c",
            may_exist=False,
            spent=unknown,
            models=("gpt",),
        )
    )
    assert _trailers(root)[2] == f"{COST_TRAILER}: unknown"


def test_nothing_changed_is_a_skip(tmp_path: Path) -> None:
    """A clean tree: CommitSkipped, and no commit made."""
    root, git_handler = handler(tmp_path)
    head = git(root, "rev-parse", "HEAD")
    facts = git_handler.commit(
        CreateCommit(
            effect_id=EffectId("run:3"), message="nothing", may_exist=False, spent=_NONE, models=()
        )
    )
    assert [type(f) for f in facts] == [CommitSkipped]
    assert git(root, "rev-parse", "HEAD") == head


def test_a_commit_asked_for_again_after_a_crash_is_found_not_repeated(tmp_path: Path) -> None:
    """``may_exist``: the commit made before the crash is reported again, none is added."""
    root, git_handler = handler(tmp_path)
    (root / "a.txt").write_text("a")
    first = git_handler.commit(
        CreateCommit(
            effect_id=EffectId("run:9"), message="Add a", may_exist=False, spent=_NONE, models=()
        )
    )
    (root / "b.txt").write_text("b")  # work of a later step, not to be swept into it
    again = git_handler.commit(
        CreateCommit(
            effect_id=EffectId("run:9"), message="Add a", may_exist=True, spent=_NONE, models=()
        )
    )
    assert isinstance(first[0], CommitCreated)
    assert isinstance(again[0], CommitCreated)
    assert again[0].sha == first[0].sha
    assert git(root, "rev-list", "--count", "HEAD") == "2"
    # Without may_exist the same effect id would commit anew: the lookup is what saves it.
    other = git_handler.commit(
        CreateCommit(
            effect_id=EffectId("run:10"), message="Add b", may_exist=True, spent=_NONE, models=()
        )
    )
    assert isinstance(other[0], CommitCreated)
    assert other[0].sha != first[0].sha


def test_a_commit_is_found_by_its_exact_effect_id(tmp_path: Path) -> None:
    """The lookup of ``may_exist`` matches the trailer's whole id: a commit for ``run:20``
    is not the commit of ``run:2``, which is made."""
    root, git_handler = handler(tmp_path)
    (root / "a.txt").write_text("a")
    later = git_handler.commit(
        CreateCommit(
            effect_id=EffectId("run:20"), message="Add a", may_exist=False, spent=_NONE, models=()
        )
    )
    (root / "b.txt").write_text("b")
    asked = git_handler.commit(
        CreateCommit(
            effect_id=EffectId("run:2"), message="Add b", may_exist=True, spent=_NONE, models=()
        )
    )
    assert isinstance(later[0], CommitCreated)
    assert isinstance(asked[0], CommitCreated)
    assert asked[0].sha != later[0].sha
    assert git(root, "rev-list", "--count", "HEAD") == "3"


def test_a_commit_git_refuses_is_a_workspace_error(tmp_path: Path) -> None:
    """Git failing (here: another git process holds the index lock) is a fact, not a crash."""
    root, git_handler = handler(tmp_path)
    (root / ".git" / "index.lock").write_text("")
    (root / "c.txt").write_text("c")
    facts = git_handler.commit(
        CreateCommit(
            effect_id=EffectId("r:1"), message="m", may_exist=False, spent=_NONE, models=()
        )
    )
    assert len(facts) == 1
    assert isinstance(facts[0], WorkspaceIoError)
    assert facts[0].kind is WorkspaceErrorKind.GIT
    assert "git add --all" in facts[0].message
    assert "failed" in facts[0].message
    assert "index.lock" in facts[0].message


def test_a_clean_rebase_succeeds_and_a_conflict_is_reported_then_aborted(
    tmp_path: Path,
) -> None:
    """Rebase onto a branch: clean -> the new head; conflicting -> the paths, and the abort
    puts the branch back exactly as it was."""
    root, git_handler = handler(tmp_path)
    git(root, "checkout", "-q", "-b", "upstream")
    (root / "up.txt").write_text("upstream\n")
    git(root, "add", "up.txt")
    git(root, "commit", "-q", "-m", "upstream work")
    git(root, "checkout", "-q", "main")
    (root / "mine.txt").write_text("mine\n")
    git(root, "add", "mine.txt")
    git(root, "commit", "-q", "-m", "my work")
    clean = git_handler.rebase(Rebase(effect_id=EffectId("r:2"), onto="upstream"))
    assert [type(f) for f in clean] == [RebaseStarted, RebaseSucceeded]
    assert isinstance(clean[1], RebaseSucceeded)
    assert clean[1].head == git(root, "rev-parse", "HEAD")

    git(root, "checkout", "-q", "upstream")
    (root / "README.md").write_text("theirs\n")
    git(root, "commit", "-q", "-am", "theirs")
    git(root, "checkout", "-q", "main")
    (root / "README.md").write_text("ours\n")
    git(root, "commit", "-q", "-am", "ours")
    before = git(root, "rev-parse", "HEAD")
    conflicted = git_handler.rebase(Rebase(effect_id=EffectId("r:3"), onto="upstream"))
    assert [type(f) for f in conflicted] == [RebaseStarted, RebaseConflicted]
    assert isinstance(conflicted[1], RebaseConflicted)
    assert conflicted[1].paths == ("README.md",)
    aborted = git_handler.abort(AbortRebase(effect_id=EffectId("r:4")))
    assert [type(f) for f in aborted] == [RebaseAborted]
    assert git(root, "rev-parse", "HEAD") == before
    assert (root / "README.md").read_text() == "ours\n"


def test_a_configured_branch_is_created_and_the_run_commits_there(tmp_path: Path) -> None:
    """``branch = ...``: the run switches to it (creating it); main is left as it was."""
    from tests.runtime.workspace import FINISH_EVERYTHING, run_here, scripted

    change = FINISH_EVERYTHING.replace("[[default]]", '[[development]]\nwrite."f.txt" = "x"')
    root = make_workspace(
        tmp_path / "ws",
        scripts={"s.toml": change + FINISH_EVERYTHING},
        agents={"main": scripted("s.toml")},
        extra='branch = "ralph/work"',
    )
    main_before = git(root, "rev-parse", "main")
    result = run_here(root)
    assert git(root, "rev-parse", "--abbrev-ref", "HEAD") == "ralph/work"
    assert git(root, "rev-parse", "main") == main_before
    # f.txt from the first development step, work.txt from every role (FINISH_EVERYTHING).
    assert git(root, "show", "--name-only", "--format=", "ralph/work") == "f.txt\nwork.txt"
    assert result.state.ledger.commits == 1


OWN_FILES_SCRIPT = """
[[development]]
write."app.py" = "x = 2\\n"
write.".aider.chat.history.md" = "# aider chat"
write."ralph.toml.bak" = "a copy the agent made"
write.".agent/out/status" = "completed\\ndone"

[[default]]
write.".agent/out/plan.md" = "1. do it"
write.".agent/out/status" = "completed\\ndone"
write.".agent/out/issues.md" = ""
write.".agent/out/commit-message" = "Do it"
"""


def test_a_run_commits_the_agents_work_and_never_ralphs_files_or_its_store(
    tmp_path: Path,
) -> None:
    """ralph.toml and PROMPT.md left untracked (as ``ralph init`` leaves them), a store given
    by path inside the repository, and an agent's own history file: the run's commit holds
    the agent's work only, and every one of those files is still there, untracked."""
    import sys

    root = make_workspace(
        tmp_path / "repo", scripts={"s.toml": OWN_FILES_SCRIPT}, agents={"main": scripted("s.toml")}
    )
    git(root, "rm", "--quiet", "--cached", "ralph.toml", "PROMPT.md")
    git(root, "commit", "--quiet", "-m", "untrack ralph's files")
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pipeline.app.cli",
            "run",
            "-C",
            str(root),
            "--plain",
            "--store",
            "mystore.db",
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        cwd=root,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    committed = set(git(root, "log", "--name-only", "--format=", "HEAD~1..HEAD").split())
    assert committed == {"app.py", "ralph.toml.bak"}
    untracked = git(root, "status", "--porcelain", "--untracked-files=all")
    for own in ("ralph.toml", "PROMPT.md", "mystore.db", ".aider.chat.history.md"):
        assert f"?? {own}" in untracked.splitlines()
