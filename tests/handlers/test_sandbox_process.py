"""The sandbox on this machine: the probe says what it found in words a person can act on, and
a sandboxed process is stopped the way an unsandboxed one is, its grace period included
(SIGTERM reaches the agent, not bwrap first, which would end the namespace at once)."""

from __future__ import annotations

import http.server
import os
import shutil
import socket
import subprocess
import threading
import time
from pathlib import Path

import attrs
import pytest

import pipeline
from pipeline.core.sandbox import Endpoint, SandboxPolicy
from pipeline.events import TimeoutKind
from pipeline.handlers.agents import ProcessSpec, run_process
from pipeline.handlers.runtime._sandboxing import run_in
from pipeline.handlers.sandbox import (
    AgentNeeds,
    Sandbox,
    WorkspacePaths,
    probe,
    reach_from_inside,
)
from pipeline.handlers.sandbox._gather import interpreter_dirs

needs_bwrap = pytest.mark.skipif(
    shutil.which("bwrap") is None and not os.environ.get("CI"),
    reason="bubblewrap is not installed",
)


def _fake_bwrap(folder: Path, body: str) -> dict[str, str]:
    folder.mkdir()
    program = folder / "bwrap"
    program.write_text(f"#!/bin/sh\n{body}\n")
    program.chmod(0o755)
    return {"PATH": str(folder)}


def test_no_bwrap_on_path_says_how_to_install_it(tmp_path: Path) -> None:
    found = probe({"PATH": str(tmp_path)}, 1000)
    assert not found.works
    hint = "install bubblewrap (apt-get install bubblewrap)"
    assert found.reason == f"bwrap not found on PATH: {hint}"


def test_a_bwrap_that_cannot_make_namespaces_is_named_with_its_own_message(
    tmp_path: Path,
) -> None:
    said = "bwrap: No permissions to create new namespace, likely because the kernel does not allow"
    env = _fake_bwrap(
        tmp_path / "bin",
        f'[ "$1" = --version ] && echo "bubblewrap 0.8.0" && exit 0\necho "{said}" >&2\nexit 1',
    )
    found = probe(env, 1000)
    assert not found.works
    assert found.version == "0.8.0"
    assert found.reason == f"bwrap cannot start a sandbox here: {said}"


@needs_bwrap
def test_the_real_bwrap_works_here() -> None:
    found = probe(dict(os.environ), 1000)
    assert found.works, found.reason
    assert found.backend.startswith("bubblewrap 0.")
    assert found.uid == (1000 if os.geteuid() == 0 else None)


def _workspace(tmp_path: Path) -> WorkspacePaths:
    root = tmp_path / "ws"
    root.mkdir()
    subprocess.run(["git", "init", "--quiet", str(root)], check=True)
    (root / ".ralph").mkdir()
    return WorkspacePaths(
        workspace=root,
        ralph_dir=root / ".ralph",
        events_file=root / ".ralph" / "events-r1.jsonl",
        marker_dir=root / ".agent" / "tmp",
        config_file=root / "ralph.toml",
        prompt_file=root / "PROMPT.md",
        state_dir=root / ".git" / "ralph",
        git_dirs=(root / ".git", root / ".git"),
    )


TRAPPING = (
    "trap 'sleep 1; echo graceful > ended; exit 0' TERM\necho ready\nwhile :; do sleep 0.1; done\n"
)


def _run_trapping(
    tmp_path: Path, *, spare_leader: bool, relayed: bool = False
) -> tuple[Path, TimeoutKind | None]:
    paths = _workspace(tmp_path)
    found = probe(dict(os.environ), 1000)
    sandbox = Sandbox(policy=SandboxPolicy(), probe=found, paths=paths)
    spec = ProcessSpec(
        argv=("sh", "-c", TRAPPING),
        cwd=paths.workspace,
        env={**os.environ, "HOME": str(tmp_path / "home")},
        output_path=tmp_path / "out.log",
        total_timeout_s=1.0,
        grace_s=5.0,
    )
    # With an endpoint allowed, the relay runs in front of the agent and passes the signal on.
    needs = AgentNeeds(endpoints=(Endpoint("127.0.0.1", 18_080),) if relayed else ())
    with sandbox.wrapped(spec, needs) as wrapped:
        assert wrapped.spec.spare_leader
        assert ("/run/ralph/relay.py" in wrapped.spec.argv) is relayed
        result = run_process(attrs.evolve(wrapped.spec, spare_leader=spare_leader))
    return paths.workspace / "ended", result.timed_out


@needs_bwrap
@pytest.mark.parametrize("relayed", [False, True], ids=["direct", "behind-the-relay"])
def test_a_timed_out_sandboxed_agent_gets_its_grace_period(tmp_path: Path, relayed: bool) -> None:
    ended, timed_out = _run_trapping(tmp_path, spare_leader=True, relayed=relayed)
    assert timed_out is TimeoutKind.TOTAL
    assert ended.read_text() == "graceful\n"


@needs_bwrap
def test_signalling_bwrap_first_would_take_the_grace_period_away(tmp_path: Path) -> None:
    """Why ``spare_leader`` exists: SIGTERM to the whole group ends the namespace at once."""
    ended, timed_out = _run_trapping(tmp_path, spare_leader=False)
    assert timed_out is TimeoutKind.TOTAL
    assert not ended.exists()


@needs_bwrap
def test_the_agent_sees_the_filtered_environment_and_an_empty_home(tmp_path: Path) -> None:
    paths = _workspace(tmp_path)
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_ed25519").write_text("KEY")
    sandbox = Sandbox(
        policy=SandboxPolicy(pass_env=("MY_*",)), probe=probe(dict(os.environ), 1000), paths=paths
    )
    env = {
        **os.environ,
        "HOME": str(home),
        "MY_SETTING": "kept",
        "OTHER_TOKEN": "dropped",
        "RALPH_STORE": "postgresql://x",
    }
    script = 'env > env.txt; ls -A "$HOME" > home.txt'
    spec = ProcessSpec(
        argv=("sh", "-c", script), cwd=paths.workspace, env=env, output_path=tmp_path / "out.log"
    )
    needs = AgentNeeds(set_env={"GIVEN": "as written"})
    with sandbox.wrapped(spec, needs) as wrapped:
        result = run_process(wrapped.spec)
    assert result.exit_code == 0, (tmp_path / "out.log").read_text()
    seen = dict(
        line.split("=", 1)
        for line in (paths.workspace / "env.txt").read_text().splitlines()
        if "=" in line
    )
    assert seen["MY_SETTING"] == "kept"
    assert seen["GIVEN"] == "as written"
    assert seen["TMPDIR"] == "/tmp"
    assert "OTHER_TOKEN" not in seen
    assert "RALPH_STORE" not in seen
    assert (paths.workspace / "home.txt").read_text() == ""


@needs_bwrap
def test_a_store_kept_in_the_work_tree_is_read_only_inside(tmp_path: Path) -> None:
    """A store file in the work tree (``--store ./x.db``) and its side files cannot be written
    by a sandboxed process, while the work tree around them can; without the store named, the
    same write goes through (so the check can fail)."""
    paths = _workspace(tmp_path)
    store = paths.workspace / "x.db"
    wal = paths.workspace / "x.db-wal"
    script = "echo agent >> x.db; echo agent >> x.db-wal; echo agent > beside.txt"
    spec = ProcessSpec(
        argv=("sh", "-c", script),
        cwd=paths.workspace,
        env={**os.environ, "HOME": str(tmp_path / "home")},
        output_path=tmp_path / "out.log",
    )
    found = probe(dict(os.environ), 1000)
    for named, written in ((store, "ralph\n"), (None, "ralph\nagent\n")):
        for file in (store, wal):
            file.write_text("ralph\n")
        sandbox = Sandbox(
            policy=SandboxPolicy(), probe=found, paths=attrs.evolve(paths, store=named)
        )
        result, _ = run_in(sandbox, spec, AgentNeeds())
        assert result.exit_code is not None, (tmp_path / "out.log").read_text()
        assert (store.read_text(), wal.read_text()) == (written, written)
        assert (paths.workspace / "beside.txt").read_text() == "agent\n"


@needs_bwrap
def test_reach_from_inside_tells_a_server_from_a_closed_port_and_a_refused_host() -> None:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), http.server.BaseHTTPRequestHandler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    closed = socket.socket()
    closed.bind(("127.0.0.1", 0))  # bound, never listening: nothing answers there
    try:
        answering = Endpoint("127.0.0.1", server.server_address[1])
        silent = Endpoint("127.0.0.1", closed.getsockname()[1])
        outside = Endpoint("nowhere.invalid", 443)  # through the proxy, which cannot resolve it
        found = reach_from_inside(probe(dict(os.environ), 1000), [answering, silent, outside], 2)
    finally:
        server.shutdown()
        server.server_close()
        closed.close()
    assert found[answering] is None
    assert found[silent] == "nothing answers there on this machine"
    assert found[outside] == "the gate answered 'HTTP/1.1 502 Bad Gateway'"


def test_ralphs_own_package_is_shown_unless_the_workspace_holds_it(tmp_path: Path) -> None:
    """An editable install keeps ``pipeline`` in its checkout, which may lie in a hidden
    place (``$HOME``, ``/tmp``): it is bound back, but not over a workspace that is that
    checkout, where an agent working on ralph must be able to change it."""
    package = str(Path(pipeline.__file__).resolve().parent)
    assert package in interpreter_dirs(tmp_path)
    assert package not in interpreter_dirs(Path(package).parent)


@needs_bwrap
@pytest.mark.parametrize("relayed", [False, True], ids=["direct", "behind-the-relay"])
def test_an_agent_killed_by_a_signal_inside_is_said_killed(tmp_path: Path, relayed: bool) -> None:
    """bwrap and the relay report a death by signal N as exit status 128 + N; the run reads
    it as running directly does (-N), so a killed agent is not an ordinary failure."""
    paths = _workspace(tmp_path)
    sandbox = Sandbox(policy=SandboxPolicy(), probe=probe(dict(os.environ), 1000), paths=paths)
    spec = ProcessSpec(
        argv=("sh", "-c", "kill -KILL $$"),
        cwd=paths.workspace,
        env={**os.environ, "HOME": str(tmp_path / "home")},
        output_path=tmp_path / "out.log",
    )
    needs = AgentNeeds(endpoints=(Endpoint("127.0.0.1", 18_081),) if relayed else ())
    result, seen = run_in(sandbox, spec, needs)
    assert result.exit_code == -9, (tmp_path / "out.log").read_text()
    assert (seen.refused, seen.asked) == ({}, frozenset())
    ordinary, _ = run_in(sandbox, attrs.evolve(spec, argv=("sh", "-c", "exit 3")), needs)
    assert ordinary.exit_code == 3


LEAVES_TWO = """
setsid sh -c 'while :; do date >> grows.txt; sleep 0.05; done' </dev/null >/dev/null 2>&1 &
sh -c 'while :; do echo tick; sleep 0.01; done' &
while [ ! -s grows.txt ]; do sleep 0.01; done
echo leader done
"""
"""An agent that exits 0 leaving a setsid writer in the work tree and a child printing to its
output without end."""


@needs_bwrap
@pytest.mark.parametrize("relayed", [False, True], ids=["direct", "behind-the-relay"])
def test_a_sandboxed_agent_leaves_neither_a_writer_nor_a_chatty_child(
    tmp_path: Path, relayed: bool
) -> None:
    """In the sandbox, what an agent leaves behind ends with it as well (its pid namespace
    ends with it), and a child that keeps printing does not hold the run to its timeout."""
    paths = _workspace(tmp_path)
    sandbox = Sandbox(policy=SandboxPolicy(), probe=probe(dict(os.environ), 1000), paths=paths)
    spec = ProcessSpec(
        argv=("sh", "-c", LEAVES_TWO),
        cwd=paths.workspace,
        env={**os.environ, "HOME": str(tmp_path / "home")},
        output_path=tmp_path / "out.log",
        total_timeout_s=60.0,
        inactivity_timeout_s=60.0,
    )
    needs = AgentNeeds(endpoints=(Endpoint("127.0.0.1", 18_082),) if relayed else ())
    started = time.monotonic()
    result, _ = run_in(sandbox, spec, needs)
    assert time.monotonic() - started < 30  # held by the chatty child: its 60 s timeout
    assert (result.exit_code, result.timed_out) == (0, None)
    assert b"leader done" in (tmp_path / "out.log").read_bytes()
    grows = paths.workspace / "grows.txt"
    size = grows.stat().st_size
    time.sleep(0.5)
    assert grows.stat().st_size == size
