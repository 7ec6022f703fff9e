"""Agents in the sandbox, end to end: real `ralph` processes, real bubblewrap, real git, and a
shell agent that tries every escape the issue names. Each try is denied, nothing secret
reaches the log, the logs or a commit, and the run still completes; a sandboxed agent does
not outlive a `kill -9` of ralph; `required` without bubblewrap refuses to start and `auto`
says why it is off."""

from __future__ import annotations

import http.server
import json
import os
import signal
import socket
import sqlite3
import subprocess
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import ClassVar

import pytest

from pipeline.events import (
    ConnectionRefused,
    ErrorKind,
    GateFinished,
    GateStatus,
    InvocationFailed,
    Role,
    RunCompleted,
    RunResumed,
    SandboxChecked,
    SandboxMode,
    TerminationReason,
)
from pipeline.handlers.runtime import WorkspaceLayout
from pipeline.reducers import fold
from tests.runtime.workspace import (
    PYTHON,
    RALPH,
    ROOT,
    SHELL_REPORTS,
    make_workspace,
    processes_with,
    stored_events,
    wait_for,
    wait_for_agent,
)

HAS_BWRAP = subprocess.run(["sh", "-c", "command -v bwrap"], capture_output=True).returncode == 0
pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        not HAS_BWRAP and not os.environ.get("CI"), reason="bubblewrap is not installed"
    ),
]

KEY = "ssh-ed25519-PRIVATE-4f1d2c9e8b7a"
CANARY = "canary-value-7c3e91d0a5"
REQUIRED = '[sandbox]\nmode = "required"\n'


class _Listener(http.server.BaseHTTPRequestHandler):
    hits: ClassVar[list[str]] = []

    def do_GET(self) -> None:
        type(self).hits.append(self.path)
        self.send_response(200)
        self.end_headers()

    def log_message(self, *_args: object) -> None:
        pass


@pytest.fixture
def loopback_server() -> Iterator[tuple[int, list[str]]]:
    """An HTTP server on a loopback port no sandbox allows, and the paths it was asked for."""
    hits: list[str] = []
    handler = type("Handler", (_Listener,), {"hits": hits})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server.server_address[1], hits
    finally:
        server.shutdown()
        server.server_close()


def _environment(home: Path, **more: str) -> dict[str, str]:
    return {
        **os.environ,
        "HOME": str(home),
        "COLUMNS": "160",
        "PYTHONPATH": str(ROOT),
        "SANDBOX_CANARY_TOKEN": CANARY,
        **more,
    }


def run_ralph(
    *args: str, cwd: Path, env: dict[str, str], timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*RALPH, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout
    )


def planted_home(tmp_path: Path) -> Path:
    """A home with a private key and a cloud credential in their usual places."""
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_ed25519").write_text(KEY + "\n")
    (home / ".aws").mkdir()
    (home / ".aws" / "credentials").write_text(f"aws_secret_access_key = {KEY}\n")
    return home


def hostile_script(outside: Path, port: int) -> str:
    """Shell lines that try each escape and write one verdict line per try to probes.txt."""
    return f"""
try() {{
  name=$1; shift
  if ( "$@" ) >/dev/null 2>&1; then echo "ALLOWED $name" >> probes.txt
  else echo "denied $name" >> probes.txt; fi
}}
: > probes.txt
try ssh-key cat "$HOME/.ssh/id_ed25519"
try aws-key cat "$HOME/.aws/credentials"
try write-outside sh -c 'echo planted > {outside}/planted'
try git-hook sh -c 'printf "#!/bin/sh\\necho hooked\\n" > .git/hooks/post-commit'
try git-config sh -c 'printf "[core]\\n\\thooksPath = /tmp\\n" >> .git/config'
try git-info sh -c 'echo "*.py" >> .git/info/exclude'
try rename-hooks mv .git/hooks .git/hooks-gone
try store-read test -r .git/ralph/pipeline.db
try store-write sh -c 'echo x >> .git/ralph/pipeline.db'
try ralph-dir sh -c 'echo planted > .ralph/planted'
try ralph-toml sh -c 'echo "# planted" >> ralph.toml'
try prompt sh -c 'chmod u+w PROMPT.md; echo planted >> PROMPT.md'
try loopback {PYTHON} -c "import socket; socket.create_connection(('127.0.0.1', {port}), 2)"
try canary sh -c 'test -n "$SANDBOX_CANARY_TOKEN"'
try host-processes sh -c 'ps -eo args | grep -q "[p]ipeline[.]cli"'
"""


def hostile_workspace(tmp_path: Path, body: str, extra: str = REQUIRED) -> Path:
    root = tmp_path / "ws"
    script = tmp_path / "agent.sh"
    script.write_text("#!/bin/sh\n" + body + SHELL_REPORTS)
    script.chmod(0o755)
    budgets = "max_iterations = 2\nmax_review_passes = 0\nmax_retries_per_agent = 0"
    agents = {"main": [str(script)]}
    make_workspace(root, scripts={}, agents=agents, budgets=budgets, extra=extra, sandbox="")
    return root


def ended(root: Path) -> TerminationReason:
    (completed,) = [e for e in stored_events(root) if isinstance(e, RunCompleted)]
    return completed.reason


def test_a_hostile_shell_agent_is_denied_every_escape_and_the_run_completes(
    tmp_path: Path, loopback_server: tuple[int, list[str]]
) -> None:
    port, hits = loopback_server
    home = planted_home(tmp_path)
    outside = Path(tempfile.mkdtemp(dir="/var/tmp"))  # on the host, not under a hidden /tmp
    try:
        root = hostile_workspace(tmp_path, hostile_script(outside, port))
        hooks = sorted(p.name for p in (root / ".git" / "hooks").iterdir())
        config = (root / ".git" / "config").read_text()
        done = run_ralph("run", cwd=root, env=_environment(home))
        assert done.returncode == 0, done.stdout + done.stderr
        assert ended(root) is TerminationReason.COMPLETED
        verdicts = (root / "probes.txt").read_text().splitlines()
        assert len(verdicts) == 15
        assert [v for v in verdicts if not v.startswith("denied ")] == []
        assert not (outside / "planted").exists()
        assert hits == []
        assert sorted(p.name for p in (root / ".git" / "hooks").iterdir()) == hooks
        assert (root / ".git" / "config").read_text() == config
        assert not (root / ".ralph" / "planted").exists()
        assert "planted" not in (root / "ralph.toml").read_text()
        assert "planted" not in (root / "PROMPT.md").read_text()
        history = subprocess.run(
            ["git", "log", "-p", "--all"], cwd=root, capture_output=True, text=True, check=True
        ).stdout
        store = WorkspaceLayout(root=root).store
        with sqlite3.connect(store) as db:
            stored = "\n".join(str(row) for row in db.execute("SELECT * FROM events"))
        logs = "".join(p.read_text(errors="replace") for p in root.rglob("*.log"))
        for text in (history, stored, logs, done.stdout, done.stderr):
            assert KEY not in text
            assert CANARY not in text
    finally:
        subprocess.run(["rm", "-rf", str(outside)], check=False)


def test_the_agent_still_works_in_its_workspace_and_commits(tmp_path: Path) -> None:
    body = 'echo "inside" > made-inside.txt\nls "$HOME" > home-listing.txt\n'
    root = hostile_workspace(tmp_path, body)
    done = run_ralph("run", cwd=root, env=_environment(planted_home(tmp_path)))
    assert done.returncode == 0, done.stdout + done.stderr
    assert (root / "made-inside.txt").read_text() == "inside\n"
    # $HOME is an empty folder inside: none of the planted credentials show.
    assert (root / "home-listing.txt").read_text() == ""
    files = subprocess.run(
        ["git", "ls-files"], cwd=root, capture_output=True, text=True, check=True
    ).stdout.split()
    assert "made-inside.txt" in files
    (checked,) = [e for e in stored_events(root) if isinstance(e, SandboxChecked)]
    assert (checked.mode, checked.on) == (SandboxMode.REQUIRED, True)
    assert checked.said.startswith("on (bubblewrap ")
    assert checked.said.endswith("; network: none)")
    assert "SANDBOX_CANARY_TOKEN" in checked.withheld
    assert "PATH" not in checked.withheld


def test_a_sandboxed_agent_dies_with_a_killed_ralph_and_the_run_resumes(tmp_path: Path) -> None:
    marker = f"sandboxed-sleeper-{os.getpid()}-{time.monotonic_ns()}"
    body = (
        f'if [ ! -e slept ]; then : > slept; : > started; exec sh -c "sleep 300; : {marker}"\nfi\n'
    )
    root = hostile_workspace(tmp_path, body)
    env = _environment(planted_home(tmp_path))
    driver = subprocess.Popen(
        [*RALPH, "run"], cwd=root, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    try:
        wait_for_agent(driver, marker)
        wait_for((root / "started").exists, "the agent never started", alive=driver)
        driver.send_signal(signal.SIGKILL)
        driver.wait(timeout=10)
        # A bound on the agent's 300 s sleep, not a time its end takes: its reaper kills it
        # when told of ralph's death, which a loaded machine may schedule late.
        wait_for(lambda: not processes_with(marker), "the agent outlived ralph", within_s=30)
    finally:
        if driver.poll() is None:
            driver.kill()
    resumed = run_ralph("resume", cwd=root, env=env)
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert ended(root) is TerminationReason.COMPLETED
    # The resumed part says again what it ran in: the machine may have changed since.
    events = stored_events(root)
    at = next(i for i, e in enumerate(events) if isinstance(e, RunResumed))
    assert isinstance(events[at + 1], SandboxChecked)
    assert [e.on for e in events if isinstance(e, SandboxChecked)] == [True, True]


def _bin_without_bwrap(tmp_path: Path) -> Path:
    """A folder holding only git: a PATH where bubblewrap cannot be found."""
    folder = tmp_path / "bin"
    folder.mkdir()
    git = subprocess.run(["sh", "-c", "command -v git"], capture_output=True, text=True)
    (folder / "git").symlink_to(git.stdout.strip())
    return folder


def test_required_without_bubblewrap_refuses_to_start(tmp_path: Path) -> None:
    root = hostile_workspace(tmp_path, "")
    env = _environment(tmp_path / "home", PATH=str(_bin_without_bwrap(tmp_path)))
    done = run_ralph("run", cwd=root, env=env)
    assert done.returncode == 2
    assert "the sandbox is required" in done.stderr
    assert "bwrap not found on PATH: install bubblewrap (apt-get install bubblewrap)" in (
        " ".join(done.stderr.split())
    )
    store = WorkspaceLayout(root=root).store
    if store.exists():
        with sqlite3.connect(store) as db:
            assert db.execute("SELECT count(*) FROM events").fetchone() == (0,)


def test_auto_without_bubblewrap_says_why_and_runs_as_before(tmp_path: Path) -> None:
    root = hostile_workspace(tmp_path, "", extra='[sandbox]\nmode = "auto"\n')
    env = _environment(tmp_path / "home", PATH=str(_bin_without_bwrap(tmp_path)))
    done = run_ralph("run", cwd=root, env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    said = " ".join(done.stderr.split())
    assert "sandbox: off (bwrap not found on PATH" in said
    assert 'set [sandbox] mode = "off" to silence this' in said
    (checked,) = [e for e in stored_events(root) if isinstance(e, SandboxChecked)]
    assert (checked.mode, checked.on, checked.withheld) == (SandboxMode.AUTO, False, ())
    assert checked.said.startswith("off (bwrap not found on PATH")


def test_off_runs_agents_as_before(tmp_path: Path) -> None:
    body = 'test -n "$SANDBOX_CANARY_TOKEN" && echo seen > canary.txt\n'
    root = hostile_workspace(tmp_path, body, extra='[sandbox]\nmode = "off"\n')
    done = run_ralph("run", cwd=root, env=_environment(planted_home(tmp_path)))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "sandbox" not in done.stderr
    assert (root / "canary.txt").read_text() == "seen\n"
    assert not [e for e in stored_events(root) if isinstance(e, SandboxChecked)]


def test_without_a_sandbox_table_agents_run_in_it_where_it_works(tmp_path: Path) -> None:
    body = (
        'test -n "$SANDBOX_CANARY_TOKEN" && echo seen > canary.txt || echo withheld > canary.txt\n'
    )
    root = hostile_workspace(tmp_path, body, extra="")
    done = run_ralph("run", cwd=root, env=_environment(planted_home(tmp_path)))
    assert done.returncode == 0, done.stdout + done.stderr
    assert (root / "canary.txt").read_text() == "withheld\n"
    (checked,) = [e for e in stored_events(root) if isinstance(e, SandboxChecked)]
    assert (checked.mode, checked.on) == (SandboxMode.AUTO, True)


def test_a_host_port_is_free_for_the_test(loopback_server: tuple[int, list[str]]) -> None:
    """The loopback server really answers from the host (so the sandbox's refusal above is
    the sandbox's doing)."""
    port, hits = loopback_server
    with socket.create_connection(("127.0.0.1", port), 2) as connection:
        connection.sendall(b"GET /x HTTP/1.0\r\n\r\n")
        assert connection.recv(100).startswith(b"HTTP/1.0 200")
    assert hits == ["/x"]


NETWORK_PROBE = """
n=$(cat calls 2>/dev/null || echo 0); n=$((n + 1)); echo "$n" > calls
mkdir -p prompts; cat > "prompts/prompt-$n.md"
if [ "$n" = 1 ]; then
{python} - <<'PY' > network.txt
import os, socket, urllib.request
def get(port):
    try:
        with socket.create_connection(("127.0.0.1", port), 2) as c:
            c.sendall(b"GET /from-inside HTTP/1.0\\r\\n\\r\\n")
            return "reached" if c.recv(64).startswith(b"HTTP/1.0 200") else "closed"
    except OSError:
        return "refused"
print("allowed", get({allowed}))
print("other", get({other}))
proxy = urllib.request.ProxyHandler({{"http": os.environ.get("http_proxy", "")}})
try:
    urllib.request.build_opener(proxy).open("http://blocked.example/x", timeout=5)
    print("proxy reached")
except Exception as error:
    print("proxy", getattr(error, "code", type(error).__name__))
PY
fi
"""


def test_the_network_reaches_what_is_allowed_and_a_refusal_reaches_the_next_prompt(
    tmp_path: Path, loopback_server: tuple[int, list[str]]
) -> None:
    other, other_hits = loopback_server
    hits: list[str] = []
    handler = type("Allowed", (_Listener,), {"hits": hits})
    allowed = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=allowed.serve_forever, daemon=True).start()
    try:
        port = allowed.server_address[1]
        body = NETWORK_PROBE.format(python=PYTHON, allowed=port, other=other)
        # A host that is not loopback starts the proxy; it is never asked for.
        extra = REQUIRED + f'allow = ["127.0.0.1:{port}", "pkgs.example:443"]\n'
        root = hostile_workspace(tmp_path, body, extra=extra)
        done = run_ralph("run", cwd=root, env=_environment(planted_home(tmp_path)))
    finally:
        allowed.shutdown()
        allowed.server_close()
    assert done.returncode == 0, done.stdout + done.stderr
    said = (root / "network.txt").read_text().splitlines()
    assert said == ["allowed reached", "other refused", "proxy 403"]
    assert hits == ["/from-inside"]
    assert other_hits == []
    events = stored_events(root)
    (refused,) = [e for e in events if isinstance(e, ConnectionRefused)]
    assert (refused.endpoint, refused.count) == ("blocked.example:80", 1)
    assert "blocked.example:80 (once)" in (root / "prompts" / "prompt-2.md").read_text()
    (checked,) = [e for e in events if isinstance(e, SandboxChecked)]
    assert checked.endpoints == (f"127.0.0.1:{port}", "pkgs.example:443")
    assert f"network: 127.0.0.1:{port}, pkgs.example:443)" in checked.said


def test_gates_and_validate_run_in_the_sandbox_too(tmp_path: Path) -> None:
    """A gate and the final check run the repository's code: each passes only where the
    planted key is out of its reach and git's hooks are read-only."""
    check = (
        'cat "$HOME/.ssh/id_ed25519" > /dev/null 2>&1 && exit 1; '
        "touch .git/hooks/pre-push 2>/dev/null && exit 1; "
        'test -z "$SANDBOX_CANARY_TOKEN"'
    )
    # A JSON array of strings is a TOML one too.
    final = json.dumps(["sh", "-c", check])
    gate = json.dumps(["sh", "-c", check + ' && test "$GATE_SETTING" = given'])
    extra = (
        f'validate = {final}\n{REQUIRED}\n[[gates]]\nname = "hostile"\nargv = {gate}\n'
        'env = { GATE_SETTING = "given" }\n'
    )
    root = hostile_workspace(tmp_path, "", extra=extra)
    done = run_ralph("run", cwd=root, env=_environment(planted_home(tmp_path)))
    assert done.returncode == 0, done.stdout + done.stderr
    assert ended(root) is TerminationReason.COMPLETED
    gates = [e for e in stored_events(root) if isinstance(e, GateFinished)]
    assert [g.status for g in gates] == [GateStatus.PASSED]


def test_a_loopback_endpoint_below_1024_is_refused_before_the_run_starts(tmp_path: Path) -> None:
    """The relay listens at the endpoint's own port inside, where no agent may take one below
    1024: said at once, not as an agent that fails to start."""
    root = hostile_workspace(tmp_path, "", extra=REQUIRED + 'allow = ["127.0.0.1:80"]\n')
    done = run_ralph("run", cwd=root, env=_environment(tmp_path / "home"))
    assert done.returncode == 2
    said = " ".join(done.stderr.split())
    assert "cannot relay a loopback endpoint below port 1024 (127.0.0.1:80)" in said


_GEMINI_FAILED = {
    "type": "result",
    "status": "error",
    "error": {"type": "unknown", "message": "[API Error: fetch failed sending request]"},
    "stats": {"total_tokens": 0, "input_tokens": 0, "output_tokens": 0, "cached": 0, "input": 0},
}
ZERO_USAGE_GEMINI = (
    "#!/bin/sh\ncat > /dev/null\n"
    """echo '{"type":"init","session_id":"s1","model":"gemini-2.5-flash"}'\n"""
    f"echo '{json.dumps(_GEMINI_FAILED)}'\nexit 1\n"
)
"""What the pinned Gemini CLI prints when its request cannot get out: usage figures, zeros."""


def test_an_agent_cli_that_may_reach_nothing_reached_no_model_whatever_usage_it_printed(
    tmp_path: Path,
) -> None:
    """With ``network = "none"`` a preset's CLI cannot have reached its model, though Claude
    Code and Gemini CLI print usage (zeros) all the same: the start warns, its failure says
    the sandbox cut it off, and, the configuration's doing, it is neither run again nor
    handed to dev-fix: the run stops for a person (a gemini on PATH printing what the real
    one does)."""
    folder = tmp_path / "bin"
    folder.mkdir()
    (folder / "gemini").write_text(ZERO_USAGE_GEMINI)
    (folder / "gemini").chmod(0o755)
    extra = REQUIRED + 'network = "none"\n\n[agents.main]\npreset = "gemini"\ntimeout_s = 60\n'
    budgets = "max_iterations = 1\nmax_review_passes = 0\nmax_retries_per_agent = 2"
    root = make_workspace(
        tmp_path / "ws", scripts={}, agents={}, budgets=budgets, extra=extra, sandbox=""
    )
    path = f"{folder}{os.pathsep}{os.environ['PATH']}"
    done = run_ralph("run", cwd=root, env=_environment(tmp_path / "home", PATH=path))
    assert done.returncode != 0, done.stdout + done.stderr
    warning = " ".join(done.stderr.split())
    assert (
        "sandbox: agents.main (gemini) can reach nothing in the sandbox ([sandbox] network is "
        "none), so its CLI cannot reach its model: every invocation of it will fail"
    ) in warning
    failed = [e for e in stored_events(root) if isinstance(e, InvocationFailed)]
    assert [e.role for e in failed] == [Role.PLANNER], failed
    (failure,) = failed
    assert (failure.error, failure.retriable) == (ErrorKind.CONFIGURATION, False)
    assert "fetch failed sending request" in failure.message
    assert failure.message.endswith(
        "; it failed before any model request; the sandbox lets this agent reach nothing "
        "([sandbox] network is none), so it cannot reach its model"
    )
    assert fold(stored_events(root)).termination is TerminationReason.HUMAN_INTERVENTION_REQUIRED
