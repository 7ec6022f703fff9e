"""The mount plan by example, one rule of section 6 each: what is hidden, what is bound back,
what stays read-only inside the writable workspace, and what cannot be honoured."""

from __future__ import annotations

import attrs
import pytest

from pipeline.core.agents import PRESETS
from pipeline.core.sandbox import (
    DataFile,
    Hidden,
    SandboxError,
    in_place_paths,
    mount_plan,
    preset_paths,
    with_account,
)
from tests.sandbox.argv import Op, final_state, index_of, parse
from tests.sandbox.inputs import HOME, W, plan_ops, workspace_inputs

SANDBOX_PRESETS = {name: preset.sandbox for name, preset in PRESETS.items()}


def test_the_namespaces_come_first_and_never_a_new_session() -> None:
    """Every namespace, the sandbox dies with ralph, no capability, the uid inside; no
    ``--new-session`` (the recorded process group must reach every sandboxed process)."""
    argv = mount_plan(workspace_inputs())
    assert argv[:9] == (
        "--unshare-all",
        "--die-with-parent",
        "--cap-drop",
        "ALL",
        "--uid",
        "1000",
        "--gid",
        "1000",
        "--ro-bind",
    )
    assert "--new-session" not in argv
    assert "--uid" not in mount_plan(workspace_inputs(uid=None))


def test_the_system_is_read_only_with_private_tmp_and_run() -> None:
    """``/`` read-only, fresh ``/dev`` and ``/proc``, empty ``/tmp`` and ``/run`` (a host
    socket connects even under a read-only bind)."""
    ops = plan_ops(workspace_inputs())
    assert [(op.flag, op.args) for op in ops[5:10]] == [
        ("--ro-bind", ("/", "/")),
        ("--dev", ("/dev",)),
        ("--proc", ("/proc",)),
        ("--tmpfs", ("/tmp",)),
        ("--tmpfs", ("/run",)),
    ]
    assert final_state(ops, "/etc/hostname") == "read"
    assert final_state(ops, "/run/docker.sock") == "cover"


def test_home_is_a_tmpfs_with_the_presets_folders_bound_back() -> None:
    """``$HOME`` is empty but for the CLI's folder (writable), its hooks and settings
    (read-only on top), ralph's interpreter and the toolchains (read-only)."""
    ops = plan_ops(workspace_inputs())
    home = index_of(ops, "--tmpfs", HOME)
    claude = index_of(ops, "--bind", f"{HOME}/.claude")
    hooks = index_of(ops, "--ro-bind-try", f"{HOME}/.claude/hooks")
    assert home < claude < hooks
    assert index_of(ops, "--ro-bind", f"{HOME}/.pyenv/versions/3.11.7") > home
    assert final_state(ops, f"{HOME}/.claude/.credentials.json") == "write"
    assert final_state(ops, f"{HOME}/.claude/hooks/x.sh") == "read"
    assert final_state(ops, f"{HOME}/.ssh/id_ed25519") == "cover"
    assert final_state(ops, f"{HOME}/Documents/taxes.pdf") == "cover"
    assert final_state(ops, f"{HOME}/.cargo/bin/cargo") == "read"


def test_a_path_entry_in_home_is_bound_back_and_one_elsewhere_is_not() -> None:
    """``PATH`` entries the plan hid are bound back read-only; those under ``/`` show already;
    relative ones and one inside a deny-list folder are left out."""
    inputs = workspace_inputs(
        path_entries=(f"{HOME}/bin/", "/usr/bin", "bin", f"{HOME}/.ssh/bin", "/tmp/t/bin")
    )
    argv = mount_plan(inputs)
    assert ("--ro-bind-try", f"{HOME}/bin", f"{HOME}/bin") == argv[argv.index(f"{HOME}/bin") - 1 :][
        :3
    ]
    assert "/usr/bin" not in argv
    assert "bin" not in argv
    assert f"{HOME}/.ssh/bin" not in argv
    assert "/tmp/t/bin" in argv


def test_the_whole_git_folder_is_read_only_after_the_workspace() -> None:
    """The writable workspace comes first; the whole ``.git`` is bound read-only after it
    (bwrap: the later mount wins), with no ``-try``: refs, objects, the index, ``commondir``,
    hooks, config and info. ralph alone writes git."""
    ops = plan_ops(workspace_inputs())
    workspace = index_of(ops, "--bind", W)
    assert index_of(ops, "--ro-bind", f"{W}/.git") > workspace
    for path in ("hooks/x", "config", "info/x", "commondir", "objects/ab/cdef", "index"):
        assert final_state(ops, f"{W}/.git/{path}") == "read", path
    assert final_state(ops, f"{W}/.git/refs/heads/main") == "read"
    assert final_state(ops, f"{W}/.git/worktrees/other/ralph/pipeline.db") == "cover"
    assert final_state(ops, f"{W}/src/main.py") == "write"


def test_the_process_has_its_own_writable_copy_of_the_index() -> None:
    """git's folder is read-only, yet ``git checkout REV -- PATH`` needs an index it can
    write: the process's own copy is bound writable at ``/run/ralph-index``, late."""
    ops = plan_ops(workspace_inputs(index_dir="/var/tmp/ralph-index-1"))
    assert index_of(ops, "--bind", "/run/ralph-index") > index_of(ops, "--ro-bind", f"{W}/.git")
    assert final_state(ops, "/run/ralph-index/index") == "write"
    assert final_state(ops, f"{W}/.git/index") == "read"


def test_ralphs_own_git_writes_objects_but_not_hooks_config_or_info() -> None:
    """ralph's own git, running the repository's hooks sandboxed, writes objects and refs;
    ``.git/hooks``, ``config`` and ``info`` stay read-only, bound after the workspace with no
    ``-try``; other runs' state stays hidden."""
    ops = plan_ops(workspace_inputs(git_writable=True, events_file=None))
    workspace = index_of(ops, "--bind", W)
    for name in ("hooks", "config", "info"):
        assert index_of(ops, "--ro-bind", f"{W}/.git/{name}") > workspace
        assert final_state(ops, f"{W}/.git/{name}/x") == "read"
    assert index_of(ops, "--ro-bind-try", f"{W}/.git/config.worktree") > workspace
    assert final_state(ops, f"{W}/.git/objects/ab/cdef") == "write"
    assert final_state(ops, f"{W}/.git/worktrees/other/ralph/pipeline.db") == "cover"


def test_ralphs_files_are_read_only_but_the_events_file() -> None:
    """``.ralph`` read-only with the run's events file writable back; ``ralph.toml``, the
    prompt file, ``.agent/tmp`` and the default protected files read-only."""
    ops = plan_ops(workspace_inputs())
    assert index_of(ops, "--bind", f"{W}/.ralph/events-r1.jsonl") > index_of(
        ops, "--ro-bind", f"{W}/.ralph"
    )
    assert final_state(ops, f"{W}/.ralph/events-r1.jsonl") == "write"
    assert final_state(ops, f"{W}/.ralph/agent-group.json") == "read"
    for path in ("ralph.toml", "PROMPT.md", ".agent/tmp/completion_marker", ".vscode/tasks.json"):
        assert final_state(ops, f"{W}/{path}") == "read", path
    assert final_state(ops, f"{W}/.agent/out/status") == "write"


def test_a_process_of_no_run_may_write_nothing_of_ralphs() -> None:
    """ralph's own git (whose hooks and filters run sandboxed) writes no events file: all of
    ``.ralph`` stays read-only, git's objects stay writable."""
    ops = plan_ops(workspace_inputs(events_file=None, git_writable=True))
    assert final_state(ops, f"{W}/.ralph/events-r1.jsonl") == "read"
    assert not any(f"{W}/.ralph/events" in arg for op in ops for arg in op.args)
    assert final_state(ops, f"{W}/.git/objects/ab/cdef") == "write"
    assert final_state(ops, f"{W}/.git/hooks/post-commit") == "read"


def test_every_host_socket_is_covered_wherever_it_lies() -> None:
    """A socket the host has bound to a path is covered by ``/dev/null`` (a read-only bind
    still connects), in a system folder and in the writable workspace alike; one in a place
    hidden already needs no mount of its own."""
    sockets = ("/var/lib/db/.s.PGSQL.5432", f"{W}/dev.sock", "/tmp/.X11-unix/X0")
    argv = mount_plan(workspace_inputs(sockets=sockets))
    ops = parse(argv)
    for socket in sockets:
        assert final_state(ops, socket) == "cover", socket
    assert "/tmp/.X11-unix/X0" not in argv


def test_the_store_is_hidden() -> None:
    """ralph's state folder (the store, the saved prompts) is an empty read-only tmpfs, laid
    after the workspace."""
    argv = mount_plan(workspace_inputs())
    ops = parse(argv)
    state = f"{W}/.git/ralph"
    assert index_of(ops, "--tmpfs", state) > index_of(ops, "--bind", W)
    assert argv[argv.index(state) + 1 : argv.index(state) + 3] == ("--remount-ro", state)
    assert final_state(ops, f"{state}/pipeline.db") == "cover"


def test_a_store_in_the_work_tree_is_read_only_with_its_side_files() -> None:
    """``--store ./x.db`` in the tree: the file and SQLite's side files read-only."""
    ops = plan_ops(workspace_inputs(store=f"{W}/x.db"))
    for side in ("", "-wal", "-shm", "-journal"):
        assert final_state(ops, f"{W}/x.db{side}") == "read"


def test_a_workspace_outside_git_keeps_ralphs_folder_read_only() -> None:
    """Outside git the state folder is ``.ralph`` itself: read-only (hiding it would hide the
    events file), no git mounts."""
    inputs = workspace_inputs(git_dir=None, common_dir=None, state_dir=f"{W}/.ralph")
    argv = mount_plan(inputs)
    ops = parse(argv)
    assert not any(arg.startswith(f"{W}/.git/") for arg in argv)
    assert final_state(ops, f"{W}/.ralph/pipeline.db") == "read"
    assert final_state(ops, f"{W}/.ralph/events-r1.jsonl") == "write"


def _linked_worktree(**changes: object) -> list[Op]:
    """The plan of a run in the linked worktree ``~/src/main-worktrees/app`` of
    ``~/src/main``."""
    main = f"{HOME}/src/main"
    git_dir = f"{main}/.git/worktrees/app"
    return plan_ops(
        workspace_inputs(
            git_dir=git_dir,
            common_dir=f"{main}/.git",
            state_dir=f"{git_dir}/ralph",
            other_repositories=(main,),
            worktree_folders=(f"{main}-worktrees",),
            workspace=f"{main}-worktrees/app",
            **changes,
        )
    )


def test_a_linked_worktree() -> None:
    """The main work tree is hidden as another repository; its git folder is bound back
    read-only, this worktree's own git folder and ``.git`` pointer read-only; the state in the
    worktree's git folder, the main tree's, and the other worktrees' git folders and work
    trees hidden."""
    main = f"{HOME}/src/main"
    common = f"{main}/.git"
    git_dir = f"{common}/worktrees/app"
    ops = _linked_worktree()
    assert final_state(ops, f"{main}/README.md") == "cover"
    for path in ("objects/ab/cd", "refs/heads/main", "hooks/pre-commit", "config", "packed-refs"):
        assert final_state(ops, f"{common}/{path}") == "read", path
    for path in ("index", "HEAD", "commondir", "gitdir", "config.worktree"):
        assert final_state(ops, f"{git_dir}/{path}") == "read", path
    assert final_state(ops, f"{main}-worktrees/app/.git") == "read"
    assert final_state(ops, f"{main}-worktrees/app/src/x.py") == "write"
    assert final_state(ops, f"{git_dir}/ralph/pipeline.db") == "cover"
    assert final_state(ops, f"{common}/ralph/pipeline.db") == "cover"
    assert final_state(ops, f"{common}/worktrees/other/ralph/pipeline.db") == "cover"
    assert final_state(ops, f"{common}/worktrees/other/HEAD") == "cover"
    assert final_state(ops, f"{main}-worktrees/other/.ralph/events-r2.jsonl") == "cover"


def test_ralphs_own_git_in_a_linked_worktree() -> None:
    """With the repository's hooks on, ralph's own git in a worktree writes the common
    objects and refs and its own index; hooks and config stay read-only, every run's state
    hidden."""
    main = f"{HOME}/src/main"
    common = f"{main}/.git"
    git_dir = f"{common}/worktrees/app"
    ops = _linked_worktree(git_writable=True, events_file=None)
    assert final_state(ops, f"{common}/objects/ab/cd") == "write"
    assert final_state(ops, f"{git_dir}/index") == "write"
    assert final_state(ops, f"{common}/hooks/pre-commit") == "read"
    assert final_state(ops, f"{common}/config") == "read"
    assert final_state(ops, f"{git_dir}/config.worktree") == "read"
    assert final_state(ops, f"{git_dir}/ralph/pipeline.db") == "cover"
    assert final_state(ops, f"{common}/ralph/pipeline.db") == "cover"
    assert final_state(ops, f"{common}/worktrees/other/ralph/pipeline.db") == "cover"


def test_other_repositories_in_a_shown_place_are_hidden() -> None:
    """A sibling repository outside ``$HOME`` is covered; one inside ``$HOME`` is hidden with
    it and needs no mount of its own."""
    ops = plan_ops(
        workspace_inputs(workspace="/srv/app", other_repositories=("/srv/other", f"{HOME}/x"))
    )
    assert index_of(ops, "--tmpfs", "/srv/other") < index_of(ops, "--bind", "/srv/app")
    assert final_state(ops, "/srv/other/.git/config") == "cover"
    assert not any(op.dest == f"{HOME}/x" for op in ops)


def test_a_deny_entry_under_a_read_entry_is_hidden_again() -> None:
    """``read = ["~/.config"]`` shows the folder, but not ``~/.config/gcloud`` in it: the
    hide is laid again after the read entry."""
    inputs = workspace_inputs(
        read=(f"{HOME}/.config",), hidden=(Hidden(path=f"{HOME}/.config/gcloud", is_dir=True),)
    )
    ops = plan_ops(inputs)
    assert index_of(ops, "--tmpfs", f"{HOME}/.config/gcloud") > index_of(
        ops, "--ro-bind-try", f"{HOME}/.config"
    )
    assert final_state(ops, f"{HOME}/.config/gcloud/credentials.db") == "cover"
    assert final_state(ops, f"{HOME}/.config/other/x") == "read"


def test_a_hidden_file_inside_the_workspace_stays_hidden() -> None:
    """``hide`` can name a file in the workspace: covered by ``/dev/null`` after the
    workspace is bound."""
    ops = plan_ops(workspace_inputs(hidden=(Hidden(path=f"{W}/.env", is_dir=False),)))
    last = index_of(ops, "--ro-bind", f"{W}/.env")
    assert ops[last].args[0] == "/dev/null"
    assert last > index_of(ops, "--bind", W)


def test_ralphs_interpreter_inside_the_workspace_stays_read_only() -> None:
    """A venv in the workspace that ralph runs from is bound read-only again after the
    workspace: an agent must not plant code ralph itself runs later."""
    ops = plan_ops(workspace_inputs(interpreter_dirs=(f"{W}/.venv",)))
    assert final_state(ops, f"{W}/.venv/lib/python3.11/site-packages/pipeline/x.py") == "read"


def test_a_write_entry_and_a_protected_path() -> None:
    """``write`` entries are writable (``-try``: only where they exist); ``protect`` adds
    read-only workspace paths."""
    ops = plan_ops(workspace_inputs(write=(f"{HOME}/.cache/pip",), protect=("tools/ci.sh",)))
    assert final_state(ops, f"{HOME}/.cache/pip/wheels/x") == "write"
    assert index_of(ops, "--bind-try", f"{HOME}/.cache/pip") > 0
    assert final_state(ops, f"{W}/tools/ci.sh") == "read"


def test_a_path_bound_in_place_is_not_bound_where_a_link_leads_through_it() -> None:
    """bwrap follows a link at both ends of a bind: a protected path, the store's side file or
    a CLI's settings that the handler found to be a link is named by no argument, and every
    other in-place path still is (``.git``, the main tree's git folder, is bound as that)."""
    inputs = workspace_inputs(store=f"{W}/x.db", protect=("tools/ci.sh",))
    paths = [path for _, path in in_place_paths(inputs)]
    settings = f"{HOME}/.claude/settings.json"
    assert {f"{W}/.git", f"{W}/.vscode", f"{W}/x.db-wal", f"{W}/tools/ci.sh", settings} <= set(
        paths
    )
    linked = (f"{W}/.vscode", f"{W}/x.db-wal", f"{W}/tools/ci.sh", settings)
    argv = mount_plan(attrs.evolve(inputs, linked=linked))
    for path in linked:
        assert path not in argv
    for path in set(paths) - set(linked):
        assert path in argv, path


def test_a_writable_folder_inside_ralphs_interpreter_is_refused() -> None:
    """Binding the folder read-only again cannot protect what is bound writable inside it."""
    with pytest.raises(
        SandboxError,
        match=r"a write entry \(/home/u/venvs/ralph/lib\) would be writable inside ralph's",
    ):
        mount_plan(workspace_inputs(write=(f"{HOME}/venvs/ralph/lib",)))


def test_a_write_entry_over_ralphs_interpreter_leaves_it_read_only() -> None:
    """``write = ["~/.pyenv"]`` makes the toolchain writable but for the version ralph runs
    on, bound read-only again after it."""
    ops = plan_ops(workspace_inputs(write=(f"{HOME}/.pyenv",)))
    assert final_state(ops, f"{HOME}/.pyenv/versions/3.12.0/bin/python") == "write"
    assert final_state(ops, f"{HOME}/.pyenv/versions/3.11.7/bin/python") == "read"


def test_data_files_are_bound_read_only_last() -> None:
    """The relay's sockets at ``/run/ralph``, then every data file (the passwd and group
    texts, a CLI's settings with ralph's MCP server) from its descriptor, after the preset's
    read-only settings they cover, then ``--chdir`` the workspace."""
    settings = f"{HOME}/.gemini/settings.json"
    data = (
        DataFile(dest="/etc/passwd", fd=5),
        DataFile(dest="/etc/group", fd=6),
        DataFile(dest=settings, fd=7),
    )
    preset = preset_paths(PRESETS["gemini"].sandbox, {}, HOME)
    argv = mount_plan(
        workspace_inputs(relay_dir="/tmp/ralph-net-1", data_files=data, preset=preset)
    )
    assert argv[-14:] == (
        "--bind",
        "/tmp/ralph-net-1",
        "/run/ralph",
        "--ro-bind-data",
        "5",
        "/etc/passwd",
        "--ro-bind-data",
        "6",
        "/etc/group",
        "--ro-bind-data",
        "7",
        settings,
        "--chdir",
        W,
    )
    assert ("--ro-bind-try", settings, settings) == argv[argv.index(settings) - 1 :][:3]


@pytest.mark.parametrize(
    "changes",
    [
        {"workspace": "relative/w"},
        {"home": "/home/u/"},
        {"read": ("/a/../b",)},
        {"protect": ("../x",)},
        {"git_dir": None},
        {"uid": -1},
    ],
)
def test_malformed_inputs_are_refused(changes: dict[str, object]) -> None:
    """Paths must be absolute and normal, ``protect`` relative, git's two folders together."""
    with pytest.raises(SandboxError):
        attrs.evolve(workspace_inputs(), **changes)


@pytest.mark.parametrize(("dest", "fd"), [("/etc/passwd", -1), ("etc/passwd", 3)])
def test_a_data_file_needs_an_absolute_place_and_a_descriptor(dest: str, fd: int) -> None:
    """A data file shown at a relative path, or from a negative descriptor, is refused."""
    with pytest.raises(SandboxError):
        DataFile(dest=dest, fd=fd)


def test_an_account_is_added_only_where_missing() -> None:
    """The uid inside gets a passwd and a group line when the host has none; a taken name gets
    the number after it; an existing uid leaves the texts as they are."""
    passwd = "root:x:0:0:root:/root:/bin/bash\nralph:x:1001:1001::/home/ralph:/bin/sh\n"
    group = "root:x:0:\n"
    new_passwd, new_group = with_account(passwd, group, 1000, "/root")
    assert new_passwd == passwd + "ralph1000:x:1000:1000:ralph's sandbox:/root:/bin/sh\n"
    assert new_group == group + "ralph1000:x:1000:\n"
    assert with_account(new_passwd, new_group, 1000, "/root") == (new_passwd, new_group)
    assert with_account("root:x:0:0::/root:/bin/sh", "", 4242, "/h")[0].endswith(
        "\nralph:x:4242:4242:ralph's sandbox:/h:/bin/sh\n"
    )
