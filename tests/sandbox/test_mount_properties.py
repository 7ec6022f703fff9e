"""Laws of the mount plan over generated workspaces, machines and settings: the mandatory
flags always and ``--new-session`` never; every path absolute; no hidden or protected path
uncovered by a later mount of itself or a parent; everything the agent needs still there.

Inputs come in two kinds: ``any_inputs`` overlap freely (a ``write`` entry inside ``.git``, a
``hide`` over the CLI's folder), where the plan either keeps every promise or refuses with a
SandboxError; ``sensible_inputs`` keep the families of paths apart, as a valid configuration
does, and the plan never refuses them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import attrs
import pytest
from hypothesis import given, note
from hypothesis import strategies as st

from pipeline.core.agents import PRESETS
from pipeline.core.sandbox import (
    DEFAULT_PROTECT,
    MANDATORY_FLAGS,
    DataFile,
    Hidden,
    MountInputs,
    SandboxError,
    mount_plan,
    preset_paths,
)
from tests.sandbox.argv import PATH_ARGUMENTS, final_state, parse, within
from tests.sandbox.inputs import workspace_inputs

SANDBOX_PRESETS = {name: preset.sandbox for name, preset in PRESETS.items()}

_HOMES = ("/home/u", "/root", "/tmp/t/home")
_WORKSPACES = ("{home}/src/app", "/srv/app", "/tmp/t/w")


@st.composite
def _machine(draw: st.DrawFn) -> tuple[str, str]:
    home = draw(st.sampled_from(_HOMES))
    return home, draw(st.sampled_from(_WORKSPACES)).format(home=home)


def _git(draw: st.DrawFn, workspace: str) -> dict[str, Any]:
    """No git, a plain repository or a linked worktree (its main tree hidden)."""
    kind = draw(st.sampled_from(("none", "plain", "linked")))
    if kind == "none":
        return {"state_dir": f"{workspace}/.ralph"}
    writable = draw(st.booleans())
    if kind == "plain":
        git = f"{workspace}/.git"
        return {
            "git_dir": git,
            "common_dir": git,
            "state_dir": f"{git}/ralph",
            "git_writable": writable,
            "worktree_folders": (f"{workspace}-worktrees",),
        }
    main = workspace.rsplit("/", 1)[0] + "/main"
    git_dir = f"{main}/.git/worktrees/app"
    return {
        "git_dir": git_dir,
        "common_dir": f"{main}/.git",
        "state_dir": f"{git_dir}/ralph",
        "other_repositories": (main,),
        "git_writable": writable,
    }


def _build(
    draw: st.DrawFn,
    home: str,
    workspace: str,
    paths: dict[str, st.SearchStrategy[str]],
) -> MountInputs:
    def many(family: str, size: int = 3) -> tuple[str, ...]:
        return tuple(draw(st.lists(paths[family], max_size=size)))

    preset_name = draw(st.sampled_from(sorted(SANDBOX_PRESETS)))
    moved = draw(st.sampled_from(({}, {"CLAUDE_CONFIG_DIR": f"{workspace}/.claude-config"})))
    git = _git(draw, workspace)
    others = (*git.pop("other_repositories", ()), *many("other", 2))
    return MountInputs(
        workspace=workspace,
        home=home,
        ralph_dir=f"{workspace}/.ralph",
        # None: ralph's own git, which writes no run's events file
        events_file=draw(st.sampled_from((f"{workspace}/.ralph/events-r.jsonl", None))),
        marker_dir=f"{workspace}/.agent/tmp",
        config_file=f"{workspace}/ralph.toml",
        prompt_file=f"{workspace}/PROMPT.md",
        store=draw(st.sampled_from((None, f"{workspace}/x.db"))),
        passwd_home=draw(st.sampled_from((None, "/root", "/home/v"))),
        other_repositories=others,
        hidden=tuple(
            Hidden(path=path, is_dir=draw(st.booleans()))
            for path in draw(st.lists(paths["hidden"], max_size=4))
        ),
        interpreter_dirs=many("interpreter", 2),
        program_dirs=many("program", 2),
        path_entries=(*many("path"), "/usr/bin", "relative/bin"),
        read=many("read"),
        write=many("write"),
        preset=preset_paths(SANDBOX_PRESETS[preset_name], moved, home),
        protect=tuple(
            draw(st.lists(st.sampled_from(("tools/ci.sh", "Makefile", "src")), max_size=2))
        ),
        sockets=tuple(
            draw(
                st.lists(
                    st.sampled_from(
                        ("/var/lib/db/.s.sock", f"{workspace}/dev.sock", f"{home}/.x.sock")
                    ),
                    max_size=2,
                    unique=True,
                )
            )
        ),
        relay_dir=draw(st.sampled_from((None, "/tmp/ralph-net"))),
        uid=draw(st.sampled_from((None, 1000))),
        data_files=draw(st.sampled_from(((), (DataFile(dest="/etc/passwd", fd=7),)))),
        **git,
    )


def _under(bases: Sequence[str], names: Sequence[str]) -> st.SearchStrategy[str]:
    return st.builds(
        lambda base, name: f"{base}/{name}", st.sampled_from(bases), st.sampled_from(names)
    )


_ANY_NAMES = (
    ".ssh", ".config", ".config/gcloud", ".cache", ".cache/pip", "data", ".claude", ".pyenv",
    ".pyenv/versions/3.11.7", "src", "other", ".git", ".git/hooks", ".vscode", "bin",
    ".local/bin", "main", ".ralph/logs",
)  # fmt: skip


@st.composite
def any_inputs(draw: st.DrawFn) -> MountInputs:
    """Inputs whose paths may overlap in every way."""
    home, workspace = draw(_machine())
    anywhere = _under((home, workspace, "/srv", "/opt", "/tmp/t"), _ANY_NAMES)
    families = ("other", "hidden", "interpreter", "program", "path", "read", "write")
    return _build(draw, home, workspace, dict.fromkeys(families, anywhere))


@st.composite
def sensible_inputs(draw: st.DrawFn) -> MountInputs:
    """Inputs as a valid configuration gives them: each family of paths apart from the
    others and from ralph's own."""
    home, workspace = draw(_machine())
    outside = (home, "/srv", "/opt/x")
    paths = {
        "other": _under(outside, ("repo-a", "repo-b")),
        "hidden": _under(outside, (".ssh", ".netrc", ".aws", "secrets")),
        "interpreter": _under(outside, (".pyenv/versions/3.11.7", "venv")),
        "program": _under(outside, ("agent-clis/claude-1",)),
        "path": _under((*outside, "/tmp/t"), ("venv/bin", ".local/bin", "bin")),
        "read": _under(outside, (".m2", "docs", ".secrets-not/x")),
        "write": _under(outside, (".cache/pip", "build")),
    }
    return _build(draw, home, workspace, paths)


def _guarded(inputs: MountInputs) -> tuple[list[str], list[str]]:
    """The paths the plan must keep hidden and those it must keep from being written."""
    hidden = [h.path for h in inputs.hidden] + list(inputs.other_repositories)
    hidden += inputs.sockets
    hidden.append(inputs.home)
    if inputs.state_dir != inputs.ralph_dir:
        hidden.append(inputs.state_dir)
    w = inputs.workspace
    protected = [
        inputs.ralph_dir + "/agent-group.json",
        inputs.marker_dir,
        inputs.config_file,
        inputs.prompt_file,
        *inputs.interpreter_dirs,
        *inputs.program_dirs,
        *inputs.preset.read_only,
        *(f"{w}/{p}" for p in (*DEFAULT_PROTECT, *inputs.protect)),
    ]
    common, git_dir = inputs.common_dir, inputs.git_dir
    if common is not None and git_dir is not None:
        protected += [f"{common}/{n}" for n in ("hooks", "config", "info")]
        # Every run's state and every other worktree's git folder, whoever runs.
        hidden += [f"{common}/ralph", f"{common}/worktrees/other"]
        hidden += [f"{folder}/other" for folder in inputs.worktree_folders]
        if not inputs.git_writable:  # ralph alone writes git
            names = ("objects/ab/cd", "refs/heads/main", "packed-refs", "commondir", "HEAD")
            protected += [f"{common}/{n}" for n in names]
            protected += [f"{git_dir}/{n}" for n in ("index", "HEAD", "commondir", "gitdir")]
            protected.append(f"{w}/.git")
    return hidden, protected


def _check(inputs: MountInputs, argv: tuple[str, ...]) -> None:
    ops = parse(argv)
    assert argv[: len(MANDATORY_FLAGS)] == MANDATORY_FLAGS
    assert "--new-session" not in argv
    assert ("--uid" in argv) == (inputs.uid is not None)
    for op in ops:
        for position in PATH_ARGUMENTS.get(op.flag, ()):
            path = op.args[position]
            assert path.startswith("/") or op.flag == "--ro-bind-data", (op, path)
    hidden, protected = _guarded(inputs)
    for path in hidden:
        # the workspace may lie inside a hidden place (a hidden $HOME): the place stays hidden
        assert final_state(ops, path) == "cover", path
    for path in protected:
        assert final_state(ops, path) in ("read", "cover"), path
    assert final_state(ops, inputs.workspace) == "write"
    if inputs.events_file is not None:
        assert final_state(ops, inputs.events_file) == "write"
    else:  # nothing under .ralph is writable
        assert final_state(ops, f"{inputs.ralph_dir}/events-r.jsonl") == "read"
    for folder in inputs.preset.writable:
        assert final_state(ops, folder) == "write", folder
    for folder in inputs.interpreter_dirs:
        assert final_state(ops, folder) == "read", folder
        # nothing of ralph's own is writable, not even a folder bound inside it
        writable = (inputs.workspace, *inputs.write, *inputs.preset.writable)
        assert not any(within(path, folder) for path in writable), folder


@given(any_inputs())
def test_the_plan_keeps_its_promises_or_refuses(inputs: MountInputs) -> None:
    """Whatever overlaps: either a SandboxError, or every hidden path ends covered, every
    protected one never writable (no later bind of itself or a parent re-exposes it), the
    workspace, the events file and the CLI's folders writable, the interpreter readable,
    the mandatory flags first, ``--new-session`` absent and every path absolute."""
    try:
        argv = mount_plan(inputs)
    except SandboxError as error:
        message = str(error)
    else:
        note(" ".join(argv))
        _check(inputs, argv)
        return
    assert "cannot honour both" in message


@given(sensible_inputs())
def test_sensible_inputs_are_never_refused(inputs: MountInputs) -> None:
    """A configuration whose paths do not contradict each other always gets a plan, and the
    plan keeps every promise."""
    argv = mount_plan(inputs)
    note(" ".join(argv))
    _check(inputs, argv)


@given(sensible_inputs())
def test_the_plan_is_stable(inputs: MountInputs) -> None:
    """Equal inputs give the same arguments (a resume lays out the same sandbox)."""
    assert mount_plan(inputs) == mount_plan(attrs.evolve(inputs))


def test_the_check_bites_on_a_plan_laid_in_the_wrong_order() -> None:
    """The laws are not empty: the same mounts with the writable workspace moved to the end
    (after ``.git/hooks`` and the hidden store) are caught."""
    inputs = workspace_inputs()
    argv = mount_plan(inputs)
    start = argv.index("--bind", argv.index(inputs.workspace) - 1)
    assert argv[start : start + 3] == ("--bind", inputs.workspace, inputs.workspace)
    moved = (*argv[:start], *argv[start + 3 : -2], *argv[start : start + 3], *argv[-2:])
    with pytest.raises(AssertionError):
        _check(inputs, moved)
