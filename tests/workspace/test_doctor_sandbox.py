"""``ralph doctor``'s sandbox checks with real bubblewrap, a fake one and none: what stops a
required sandbox fails, what leaves an automatic one off warns, each names its fix; every
endpoint agents need is tried from inside a real sandbox."""

from __future__ import annotations

import http.server
import json
import os
import shutil
import socket
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from pipeline.app.workspace import Status
from pipeline.app.workspace._doctor_check import Check
from pipeline.app.workspace._doctor_sandbox import check_sandbox
from pipeline.core.config import parse_config
from tests.runtime.workspace import make_workspace, ralph

needs_bwrap = pytest.mark.skipif(
    shutil.which("bwrap") is None and not os.environ.get("CI"),
    reason="bubblewrap is not installed",
)
COMMAND_AGENT = '[agents.main]\ncommand = ["true"]\n[chains]\ndefault = ["main"]\n'


def _checks(tmp_path: Path, text: str, environ: dict[str, str] | None = None) -> list[Check]:
    config = parse_config(text, "ralph.toml")
    env = {**os.environ, "HOME": str(tmp_path / "home")} if environ is None else environ
    return check_sandbox(config, env)


@pytest.fixture
def server_port() -> Iterator[int]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), http.server.BaseHTTPRequestHandler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield server.server_address[1]
    finally:
        server.shutdown()
        server.server_close()


def test_off_is_said_with_how_to_turn_it_on(tmp_path: Path) -> None:
    (check,) = _checks(tmp_path, '[sandbox]\nmode = "off"\n' + COMMAND_AGENT)
    assert (check.name, check.status) == ("sandbox", Status.OK)
    assert "off in ralph.toml" in check.detail
    assert 'mode = "auto"' in check.fix


def test_required_without_bubblewrap_fails_and_auto_warns(tmp_path: Path) -> None:
    environ = {"PATH": str(tmp_path), "HOME": str(tmp_path / "home")}
    for mode, status in (("required", Status.FAIL), ("auto", Status.WARN)):
        text = f'[sandbox]\nmode = "{mode}"\n' + COMMAND_AGENT
        (check,) = _checks(tmp_path, text, environ)
        assert check.status is status
        assert check.detail == f"{mode}, but bwrap not found on PATH: " + (
            "install bubblewrap (apt-get install bubblewrap)"
        )
        assert check.fix.startswith("install bubblewrap")


def test_a_bwrap_refused_namespaces_names_the_sysctl(tmp_path: Path) -> None:
    folder = tmp_path / "bin"
    folder.mkdir()
    fake = folder / "bwrap"
    fake.write_text(
        '#!/bin/sh\n[ "$1" = --version ] && echo "bubblewrap 0.8.0" && exit 0\n'
        'echo "bwrap: No permissions to create new namespace" >&2\nexit 1\n'
    )
    fake.chmod(0o755)
    environ = {"PATH": str(folder), "HOME": str(tmp_path / "home")}
    (check,) = _checks(tmp_path, '[sandbox]\nmode = "required"\n' + COMMAND_AGENT, environ)
    assert check.status is Status.FAIL
    assert "No permissions to create new namespace" in check.detail
    assert "unprivileged_userns" in check.fix


@needs_bwrap
def test_each_needed_endpoint_is_tried_from_inside(tmp_path: Path, server_port: int) -> None:
    closed = socket.socket()
    closed.bind(("127.0.0.1", 0))  # bound, never listening
    try:
        silent = closed.getsockname()[1]
        text = (
            f'[sandbox]\nmode = "required"\nallow = ["127.0.0.1:{server_port}"]\n'
            f'[agents.main]\ncommand = ["true"]\nsandbox = {{ allow = ["127.0.0.1:{silent}"] }}\n'
            '[chains]\ndefault = ["main"]\n'
        )
        checks = {c.name: c for c in _checks(tmp_path, text)}
    finally:
        closed.close()
    assert checks["sandbox"].status is Status.OK
    assert checks["sandbox"].detail.startswith("bubblewrap ")
    answering = checks[f"sandbox 127.0.0.1:{server_port}"]
    assert (answering.status, answering.detail) == (
        Status.OK,
        "answers from inside ([sandbox] allow)",
    )
    quiet = checks[f"sandbox 127.0.0.1:{silent}"]
    assert quiet.status is Status.WARN
    assert quiet.detail == (
        "does not answer from inside (agent main): nothing answers there on this machine"
    )


@needs_bwrap
def test_a_base_url_that_is_no_endpoint_fails_naming_the_agent(tmp_path: Path) -> None:
    text = (
        '[sandbox]\nmode = "auto"\n[agents.claude]\npreset = "claude"\n'
        'env = { ANTHROPIC_BASE_URL = "ftp://model" }\n[chains]\ndefault = ["claude"]\n'
    )
    checks = {c.name: c for c in _checks(tmp_path, text)}
    failed = checks["sandbox endpoints"]
    assert failed.status is Status.FAIL
    assert failed.detail.startswith("agents.claude: ANTHROPIC_BASE_URL")


@needs_bwrap
def test_no_network_while_an_agent_needs_its_model_warns(tmp_path: Path) -> None:
    text = (
        '[sandbox]\nmode = "auto"\nnetwork = "none"\n[agents.claude]\npreset = "claude"\n'
        'env = { ANTHROPIC_BASE_URL = "http://127.0.0.1:9999" }\n[chains]\ndefault = ["claude"]\n'
    )
    checks = {c.name: c for c in _checks(tmp_path, text)}
    warned = checks["sandbox network"]
    assert warned.status is Status.WARN
    assert "127.0.0.1:9999" in warned.detail
    assert "cannot reach their model" in warned.detail


@needs_bwrap
def test_doctor_warns_of_secrets_in_the_global_git_config(tmp_path: Path) -> None:
    """``ralph doctor`` warns of each secret in git's global configuration (a real file named
    by ``GIT_CONFIG_GLOBAL``, and one it includes) that the sandbox would show: an HTTP
    header, an ``insteadOf`` URL with a password and a credential store file outside
    ``$HOME``, naming each key and never a secret; a store file in the hidden ``$HOME`` and a
    URL without a password are not named."""
    included = tmp_path / "included"
    included.write_text('[http]\n\textraHeader = "Authorization: bearer tok-included"\n')
    config = tmp_path / "gitconfig"
    config.write_text(
        "[user]\n\tname = person\n\temail = p@example.com\n"
        '[http "https://github.com/"]\n\textraheader = AUTHORIZATION: basic c2VjcmV0\n'
        '[url "https://bob:hunter2@git.example.com/"]\n\tinsteadOf = https://git.example.com/\n'
        '[url "https://mirror.example.com/"]\n\tinsteadOf = https://plain.example.com/\n'
        '[url "https://carl:p@ss/word@x.example/"]\n\tpushInsteadOf = https://x.example/\n'
        "[credential]\n\thelper = store --file=/srv/ralph-creds\n"
        '[credential "https://home.example.com"]\n\thelper = store --file ~/kept\n'
        f"[include]\n\tpath = {included}\n"
    )
    root = make_workspace(
        tmp_path / "ws", scripts={}, agents={"main": ["true"]}, sandbox='mode = "auto"'
    )
    env = {"GIT_CONFIG_GLOBAL": str(config), "HOME": str(tmp_path / "home")}
    done = ralph("doctor", "--json", cwd=root, env=env)
    said = done.stdout + done.stderr
    (row,) = [c for c in json.loads(done.stdout)["checks"] if c["name"] == "sandbox git config"]
    assert row["status"] == "WARN", said
    for key in (
        "http.https://github.com/.extraheader",
        "http.extraheader",
        "url.https://bob:[redacted:password]@git.example.com/.insteadof",
        "url.https://carl:[redacted:password]@x.example/.pushinsteadof",
        "credential.helper keeps passwords in /srv/ralph-creds",
    ):
        assert key in row["detail"], (key, said)
    for secret in (
        "c2VjcmV0",
        "hunter2",
        "ss/word",
        "tok-included",
        "mirror.example.com",
        "~/kept",
    ):
        assert secret not in said, (secret, said)
