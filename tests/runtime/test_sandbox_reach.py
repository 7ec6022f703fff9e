"""Whether a sandboxed agent CLI reached its model is what its network gate saw, not what it
printed: Claude Code and Gemini CLI print usage (zeros) whether or not a request got out. One
that tried another endpoint than the one its settings name (allowed) never asked for its
model: its failure says what the sandbox lets it reach and is not retried; one that asked for
its model and failed met the provider's trouble, and is retried as before. A gemini on PATH
printing what the real one does, real ``ralph run``, real bubblewrap."""

from __future__ import annotations

import json
import os
from pathlib import Path

from pipeline.events import ErrorKind, InvocationFailed, Role
from tests.handlers.sandbox_support import free_port
from tests.runtime.test_sandbox import (
    _GEMINI_FAILED,
    REQUIRED,
    _environment,
    pytestmark,
    run_ralph,
)
from tests.runtime.workspace import PYTHON, make_workspace, stored_events

__all__ = ["pytestmark"]  # slow, and skipped where bubblewrap is missing


def _gemini(tmp_path: Path, port: int) -> Path:
    """A folder with a ``gemini`` that tries ``127.0.0.1:PORT``, then fails as the real one
    does when its request cannot get out: usage figures, zeros."""
    folder = tmp_path / "bin"
    folder.mkdir()
    # As a client does: a request, then wait for the answer (or the connection's end).
    connect = (
        "import socket\ntry:\n"
        f"    s = socket.create_connection(('127.0.0.1', {port}), 2)\n"
        "    s.sendall(b'GET / HTTP/1.0\\r\\n\\r\\n')\n"
        "    s.recv(1)\n"
        "except OSError:\n    pass\n"
    )
    (folder / "gemini").write_text(
        "#!/bin/sh\ncat > /dev/null\n"
        f'{PYTHON} -c "{connect}"\n'
        """echo '{"type":"init","session_id":"s1","model":"gemini-2.5-flash"}'\n"""
        f"echo '{json.dumps(_GEMINI_FAILED)}'\nexit 1\n"
    )
    (folder / "gemini").chmod(0o755)
    return folder


def _failures(tmp_path: Path, model_port: int, tried_port: int) -> list[InvocationFailed]:
    """The invocation failures of a run whose gemini's settings name ``model_port`` and
    which tries ``tried_port``."""
    folder = _gemini(tmp_path, tried_port)
    extra = REQUIRED + '\n[agents.main]\npreset = "gemini"\ntimeout_s = 60\n'
    budgets = (
        "max_iterations = 1\nmax_review_passes = 0\nmax_retries_per_agent = 1\n"
        "backoff_base_ms = 10\nbackoff_cap_ms = 20"
    )
    root = make_workspace(
        tmp_path / "ws", scripts={}, agents={}, budgets=budgets, extra=extra, sandbox=""
    )
    env = _environment(
        tmp_path / "home",
        PATH=f"{folder}{os.pathsep}{os.environ['PATH']}",
        GOOGLE_GEMINI_BASE_URL=f"http://127.0.0.1:{model_port}",
        GEMINI_API_KEY="test-key",
    )
    done = run_ralph("run", cwd=root, env=env)
    assert done.returncode != 0, done.stdout + done.stderr
    return [e for e in stored_events(root) if isinstance(e, InvocationFailed)]


def test_an_agent_that_never_asked_for_its_model_failed_before_any_model_request(
    tmp_path: Path,
) -> None:
    model = free_port()
    failed = _failures(tmp_path, model, tried_port=free_port())
    assert [e.role for e in failed] == [Role.PLANNER, Role.FIXER], failed
    for failure in failed:
        assert (failure.error, failure.retriable) == (ErrorKind.NON_ZERO_EXIT, False)
        assert failure.message.endswith(
            f"; it failed before any model request; the sandbox lets this agent reach only "
            f"127.0.0.1:{model}"
        )


def test_an_agent_that_asked_for_its_model_and_failed_is_retried_as_before(
    tmp_path: Path,
) -> None:
    model = free_port()  # nothing listens: the provider is down
    failed = _failures(tmp_path, model, tried_port=model)
    # One retry each, as for any failure that may pass: the planner's, then dev-fix's.
    assert [e.role for e in failed] == [Role.PLANNER] * 2 + [Role.FIXER] * 2, failed
    for failure in failed:
        assert failure.retriable
        assert "the sandbox lets" not in failure.message
