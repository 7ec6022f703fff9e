"""The collection check of the tamper screen: the tests a gate's runner collects on the run's
base and on the agent's tree (I/O: git, processes).

For each gate whose command runs pytest (or that names a ``collect`` command), the tests
are collected twice: on the base, in a detached scratch worktree of the base commit
(``<workspace>-worktrees/.collect-<run id>``, made anew and removed after; the base's
collection is kept for the run, by commit), and on the work tree. Each collection runs as
the gate runs (its environment, its timeouts, the run's sandbox, its own process group) and
writes its output to ``.ralph/runs/RUN/logs/collect-GATE-{base,tree}.log``. The comparison is
pure (:func:`pipeline.screening.lost_by_collection`).
"""

from __future__ import annotations

import os
import re
import secrets
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Final, final

from attrs import define, field, frozen

from pipeline.config import RalphConfig
from pipeline.events import GateSpec, ScreenHit
from pipeline.handlers.agents import ProcessSpec
from pipeline.handlers.runtime._gates import NO_INACTIVITY_LIMIT
from pipeline.handlers.runtime._gitcmd import GitError, GitPolicy, run_git
from pipeline.handlers.runtime._layout import WorkspaceLayout
from pipeline.handlers.runtime._run_setup import without_ralph_credentials
from pipeline.handlers.runtime._sandboxing import SandboxChoice, run_in
from pipeline.handlers.runtime._worktree_list import drop_scratch
from pipeline.handlers.sandbox import AgentNeeds, Sandbox
from pipeline.screening import (
    Collected,
    Runner,
    collection_argv,
    lost_by_collection,
    parse_listed,
    parse_pytest,
    runner_of,
)

__all__ = ["Collector", "collect_folder"]

PLUGIN_DIR: Final = Path(__file__).resolve().parent / "_collect_plugin"
"""The folder holding ralph's pytest plugin (``ralph_collect.py``), put on ``PYTHONPATH``."""

_MAX_OUTPUT: Final = 32 << 20
"""The most of a collection's output read (32 MiB: some hundred thousand test ids)."""

_SAFE_RUN_ID: Final = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")


@final
@frozen(kw_only=True)
class _Plan:
    """How one gate's tests are collected."""

    gate: GateSpec
    runner: Runner
    argv: tuple[str, ...]


def collect_folder(root: Path, run_id: str) -> Path:
    """Where run ``run_id`` checks its base out to collect its tests, beside the runs'
    worktrees (a sandboxed collection sees it as its workspace)."""
    name = run_id if _SAFE_RUN_ID.fullmatch(run_id) and ".." not in run_id else "run"
    return root.parent / f"{root.name}-worktrees" / f".collect-{name}"


def _last_line(text: str) -> str:
    found = [line.strip() for line in text.splitlines() if line.strip()]
    return found[-1][:300] if found else "no output"


@define(kw_only=True)
class Collector:
    """Collects the tests of a run's gates on its base and its work tree, and compares them.

    ``gate_env`` and ``commands``: each gate's ``env`` and ``collect`` command from the
    configuration, by gate name; ``sandbox``: gives the run's (None: directly);
    ``scratch_sandbox``: the sandbox a scratch worktree's collection runs in."""

    layout: WorkspaceLayout
    run_id: str
    environment: Mapping[str, str] | None
    gate_env: Mapping[str, Mapping[str, str]]
    commands: Mapping[str, tuple[str, ...]]
    grace_s: float
    policy: GitPolicy
    sandbox: Callable[[], Sandbox | None] = lambda: None
    scratch_sandbox: Callable[[Path], Sandbox | None] = lambda _scratch: None
    _bases: dict[tuple[str, str, tuple[str, ...]], Collected] = field(factory=dict, init=False)

    @classmethod
    def of(
        cls,
        layout: WorkspaceLayout,
        run_id: str,
        environment: Mapping[str, str] | None,
        config: RalphConfig,
        grace_s: float,
        policy: GitPolicy,
        sandbox: Callable[[], Sandbox | None],
        choice: SandboxChoice | None,
    ) -> Collector:
        """The collector of run ``run_id`` under ``config``: the work tree's collections in
        ``sandbox()`` (the run's, asked for when needed), a scratch worktree's in the sandbox
        ``choice`` makes for it."""

        def scratch_sandbox(scratch: Path) -> Sandbox | None:
            if choice is None:
                return None
            return choice.sandbox(WorkspaceLayout(root=scratch), config, None, ())

        return cls(
            layout=layout,
            run_id=run_id,
            environment=environment,
            gate_env={gate.name: gate.env for gate in config.gates},
            commands={gate.name: gate.collect for gate in config.gates if gate.collect},
            grace_s=grace_s,
            policy=policy,
            sandbox=sandbox,
            scratch_sandbox=scratch_sandbox,
        )

    def hits(
        self, base: str | None, gates: Sequence[GateSpec], allow: tuple[str, ...] = ()
    ) -> tuple[ScreenHit, ...]:
        """The hits of comparing each collecting gate's tests on ``base`` (None: nothing to
        compare) with those on the work tree; ``allow``: paths whose lost tests never hit."""
        plans = [plan for gate in gates if (plan := self._plan(gate)) is not None]
        if base is None or not plans:
            return ()
        self._collect_base(base, plans)
        hits: list[ScreenHit] = []
        for plan in plans:
            now = self._collect(plan, self.layout.root, self.sandbox(), "tree")
            was = self._bases[(base, plan.gate.name, plan.argv)]
            hits.extend(lost_by_collection(plan.gate.name, was, now, allow))
        return tuple(hits)

    def _plan(self, gate: GateSpec) -> _Plan | None:
        command = self.commands.get(gate.name)
        if command:
            return _Plan(gate=gate, runner=Runner.COMMAND, argv=command)
        if runner_of(gate.argv) is Runner.PYTEST:
            return _Plan(gate=gate, runner=Runner.PYTEST, argv=collection_argv(gate.argv))
        return None

    def _collect_base(self, base: str, plans: list[_Plan]) -> None:
        """The base's collections not made yet in this run, made in one scratch checkout."""
        missing = [p for p in plans if (base, p.gate.name, p.argv) not in self._bases]
        if not missing:
            return
        root = self.layout.root
        scratch = collect_folder(root, self.run_id)
        try:
            drop_scratch(root, scratch)
            scratch.parent.mkdir(parents=True, exist_ok=True)
            run_git(
                root, "worktree", "add", "--detach", "--quiet", str(scratch), base,
                policy=self.policy,
            )  # fmt: skip
        except (GitError, OSError) as error:
            # Not kept: the next screen tries again.
            for plan in missing:
                failed = Collected(failure=f"cannot check the base out: {error}"[:300])
                self._bases[(base, plan.gate.name, plan.argv)] = failed
            return
        try:
            # A sandbox binds the workspace's ralph folder, which a checkout does not hold.
            WorkspaceLayout(root=scratch).ralph_dir.mkdir(exist_ok=True)
            sandbox = self.scratch_sandbox(scratch)
            for plan in missing:
                found = self._collect(plan, scratch, sandbox, "base")
                self._bases[(base, plan.gate.name, plan.argv)] = found
        finally:
            drop_scratch(root, scratch)

    def _collect(self, plan: _Plan, cwd: Path, sandbox: Sandbox | None, side: str) -> Collected:
        """One collection of ``plan``'s gate in ``cwd``, run as the gate runs."""
        gate = plan.gate
        log = self.layout.agent_log(self.run_id, f"collect-{gate.name}-{side}")
        log.parent.mkdir(parents=True, exist_ok=True)
        given = os.environ if self.environment is None else self.environment
        base = without_ralph_credentials(given)
        own = dict(self.gate_env.get(gate.name, {}))
        token = secrets.token_hex(16)
        extra = {**own, "PYTHONDONTWRITEBYTECODE": "1"}
        if plan.runner is Runner.PYTEST:
            path = own.get("PYTHONPATH", base.get("PYTHONPATH", ""))
            extra["PYTHONPATH"] = os.pathsep.join(p for p in (str(PLUGIN_DIR), path) if p)
            extra["RALPH_COLLECT_TOKEN"] = token
        env = {
            **base,
            **extra,
            "RALPH_RUN_ID": self.run_id,
            "RALPH_GATE": gate.name,
            "RALPH_EVENTS_FILE": os.devnull,
        }
        inactivity = gate.inactivity_timeout_s
        spec = ProcessSpec(
            argv=plan.argv,
            cwd=cwd,
            env=env,
            output_path=log,
            total_timeout_s=float(gate.timeout_s),
            inactivity_timeout_s=NO_INACTIVITY_LIMIT if inactivity is None else float(inactivity),
            grace_s=self.grace_s,
            group_file=self.layout.agent_group,
        )
        result, _ = run_in(sandbox, spec, AgentNeeds(set_env=extra))
        if result.timed_out is not None:
            return Collected(failure=f"timed out ({result.timed_out.value}); see {log.name}")
        if result.exit_code is None:
            return Collected(failure=result.start_error or "the program could not be started")
        try:
            with log.open("rb") as output:
                text = output.read(_MAX_OUTPUT).decode("utf-8", "replace")
        except OSError as error:
            return Collected(failure=f"cannot read its output: {error}")
        # pytest: 0, or 5 when it collected nothing (every test gone is for the comparison).
        passed = (0, 5) if plan.runner is Runner.PYTEST else (0,)
        if result.exit_code not in passed:
            return Collected(failure=f"exit {result.exit_code}: {_last_line(text)}")
        if plan.runner is Runner.PYTEST:
            return parse_pytest(text, token)
        return parse_listed(text)
