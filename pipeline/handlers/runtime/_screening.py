"""The screen of a run's changes, carried out in the workspace (I/O: git, processes): where
the run's changes start, the untracked files it started with, and what the change from there
holds.

The pure detectors (:mod:`pipeline.core.screening`) judge the texts; this module gathers them
(:mod:`._screen`), adds what only I/O can tell (secrets on added lines, the work tree left
dirty, the workspace files a gate's command runs, the tests a gate's runner collects) and
reports one ``ChangesScreened``. It decides nothing: what a hit does is the reducer's
(``pipeline.reducers._gates``).

The collection check: for each gate whose command runs a known test runner (pytest, jest,
vitest, ``go test``, ``cargo test``; ``npm test`` whose base script is one plain jest or
vitest command) or that names a ``collect`` command, the tests are collected twice: on the
base, in a detached scratch worktree of the base commit
(``<workspace>-worktrees/.collect-<run id>``, made anew and removed after; the base's
collection is kept for the run, by commit), and on the work tree. Each collection runs as
the gate runs (its environment, its timeouts, the run's sandbox, its own process group) and
writes its output to ``.ralph/runs/RUN/logs/collect-GATE-{base,tree}.log``. The comparison is
pure (:func:`pipeline.core.screening.lost_by_collection`).
"""

from __future__ import annotations

import json
import os
import re
import secrets
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Final, TypeAlias, assert_never, final

import attrs
import orjson
from attrs import define, field, frozen

from pipeline.core.config import RalphConfig
from pipeline.core.effects import ScreenChanges
from pipeline.core.screening import (
    Collected,
    Protection,
    Runner,
    ScreenRules,
    collection_steps,
    lost_by_collection,
    named_files,
    npm_test_args,
    package_test_command,
    parse_cargo,
    parse_go,
    parse_listed,
    parse_pytest,
    parse_vitest,
    runner_of,
    screen,
    tree_dirty,
)
from pipeline.events import (
    ChangesScreened,
    Count,
    GateSpec,
    Instant,
    PipelineEvent,
    RebaseSucceeded,
    ScreenBaseRecorded,
    ScreenHit,
    ScreenKind,
    WorkspaceErrorKind,
)
from pipeline.handlers.runtime._failures import last_line
from pipeline.handlers.runtime._gates import check_spec
from pipeline.handlers.runtime._gitcmd import GitError, GitPolicy, resolved, run_git
from pipeline.handlers.runtime._io import facts_or_io_error
from pipeline.handlers.runtime._layout import WorkspaceLayout
from pipeline.handlers.runtime._pinned import link_ignored
from pipeline.handlers.runtime._run_setup import config_and_prompt
from pipeline.handlers.runtime._sandboxing import run_in
from pipeline.handlers.runtime._screen import Gathered, gather_changes, untracked_baseline
from pipeline.handlers.runtime._secrets import find_secrets
from pipeline.handlers.runtime._worktree_list import drop_scratch, fresh_scratch
from pipeline.handlers.sandbox import AgentNeeds, Sandbox

__all__ = [
    "Collector",
    "RunScreen",
    "collect_folder",
    "gate_protections",
    "run_screen",
]


def _baseline(saved: Path) -> dict[str, str]:
    try:
        data = orjson.loads(saved.read_bytes())
    except FileNotFoundError:
        return {}
    if not isinstance(data, dict):
        return {}
    return {str(k): v for k, v in data.items() if isinstance(v, str)}


def gate_protections(root: Path, gates: Sequence[GateSpec]) -> tuple[Protection, ...]:
    """A protection for each workspace file a gate's command names (``scripts/check.sh``,
    ``tests/conftest.py``), read as a pinned gate reads them (:func:`named_files`): an agent
    that edits what its gate runs has edited the gate, and its edit would land."""
    found: dict[str, Protection] = {}
    for gate in gates:
        for path in sorted(named_files((gate.argv,), lambda p: os.path.isfile(root / p))):
            found.setdefault(path, Protection(pattern=path, reason=f"gate '{gate.name}' runs it"))
    return tuple(found.values())


def _rules(effect: ScreenChanges, root: Path) -> ScreenRules:
    tamper, post = effect.tamper, effect.postconditions
    protect = gate_protections(root, effect.gates) if tamper is not None else ()
    if tamper is not None:
        protect += tuple(
            Protection(pattern=g, reason="protected in [tamper]") for g in tamper.protect
        )
    return ScreenRules(
        tamper=tamper is not None,
        no_skipped_tests=post is not None and post.no_skipped_tests,
        todo_markers=() if post is None else post.todo_markers,
        test_paths=() if tamper is None else tamper.test_paths,
        protect=protect,
        allow=() if tamper is None else tamper.allow,
    )


def _hits(
    effect: ScreenChanges, root: Path, gathered: Gathered, collector: Collector | None
) -> tuple[ScreenHit, ...]:
    hits = list(screen(gathered.changes, _rules(effect, root)))
    if collector is not None and effect.tamper is not None:
        hits.extend(collector.hits(effect.base, effect.gates, effect.tamper.allow))
    post = effect.postconditions
    if post is not None and post.no_secrets:
        hits.extend(find_secrets(gathered.changes))
    if post is not None and post.clean_tree:
        hits.extend(tree_dirty(gathered.dirty))
    if gathered.incomplete:
        detail = f"stopped after {len(gathered.changes)} changed files"
        hits.append(
            ScreenHit(kind=ScreenKind.SCREEN_INCOMPLETE, path=".", line=Count(0), detail=detail)
        )
    return tuple(attrs.evolve(h, path=_utf8(h.path), detail=_utf8(h.detail)) for h in hits)


def _utf8(text: str) -> str:
    """``text`` as a fact can hold it: a path that is not UTF-8 is read with surrogate
    escapes, which no JSON encoder takes; they become U+FFFD."""
    return text.encode("utf-8", "surrogateescape").decode("utf-8", "replace")


@frozen(kw_only=True)
class RunScreen:
    """The screen of one run's changes in its workspace; ``on`` False (the run does not
    screen) makes it record nothing."""

    on: bool
    root: Path
    saved: Path
    """Where the run keeps the texts of ``own`` that were untracked when it started."""
    own: tuple[str, ...]
    """``ralph.toml`` and the prompt file: the only untracked files a run starts with that the
    screen reads (it starts on a clean tree, and what ``--allow-dirty`` keeps is left out)."""
    policy: GitPolicy
    excludes: tuple[str, ...]
    """Paths the screen leaves out besides ralph's own folders (ralph's own files, the
    person's kept paths), as :func:`._screen.gather_changes` takes them."""
    clock: Callable[[], Instant]
    collector: Collector | None = None
    """The collection check (None: not made)."""

    def started(self) -> tuple[PipelineEvent, ...]:
        """At a run's start: keep the text of ``ralph.toml`` and the prompt file when git does
        not track them (as ``ralph init`` leaves them), so the screen tells the agent's changes
        to them from the files themselves; and record where the run's changes start."""
        if not self.on:
            return ()
        self.saved.parent.mkdir(parents=True, exist_ok=True)
        self.saved.write_bytes(orjson.dumps(untracked_baseline(self.root, self.own, self.policy)))
        return (self._base("HEAD^{commit}"),)

    def rebased(self, facts: Sequence[PipelineEvent], onto: str) -> tuple[PipelineEvent, ...]:
        """After a rebase that succeeded, the run's changes start at the tip of ``onto``: the
        upstream commits are not the agent's work."""
        if not self.on or not any(isinstance(f, RebaseSucceeded) for f in facts):
            return ()
        return (self._base(f"{onto}^{{commit}}"),)

    def _base(self, ref: str) -> PipelineEvent:
        """``ScreenBaseRecorded`` with the commit ``ref`` names now (None: no commit yet)."""
        return ScreenBaseRecorded(sha=resolved(self.root, ref, self.policy), at=self.clock())

    def changes(self, effect: ScreenChanges) -> tuple[PipelineEvent, ...]:
        """Screen the change from ``effect.base`` to the work tree: ``ChangesScreened``, or a
        ``WorkspaceIoError`` when git cannot tell (the screen is asked for again on resume)."""

        def run() -> tuple[PipelineEvent, ...]:
            baseline = _baseline(self.saved)
            gathered = gather_changes(
                self.root,
                effect.base,
                policy=self.policy,
                excludes=self.excludes,
                baseline=baseline,
            )
            hits = _hits(effect, self.root, gathered, self.collector)
            files = Count(len(gathered.changes))
            return (
                ChangesScreened(
                    scope=effect.scope, base=effect.base, files=files, hits=hits, at=self.clock()
                ),
            )

        kind, clock = WorkspaceErrorKind.GIT, self.clock
        return facts_or_io_error(run, kind, ".", clock, "cannot screen: ", (GitError, OSError))


def run_screen(
    layout: WorkspaceLayout,
    config: RalphConfig,
    run_id: str,
    keep_out: Sequence[str],
    policy: GitPolicy,
    clock: Callable[[], Instant],
    *,
    grace_s: float,
    sandbox: Callable[[], Sandbox | None],
    scratch_sandbox: Callable[[Path], Sandbox | None],
    own: tuple[str, ...],
) -> RunScreen:
    """The screen of run ``run_id``'s changes: what commits leave out (``keep_out``) is left
    out of it too, but ``ralph.toml`` and the prompt file, which an agent must not change
    either. On when the run screens or pins its gates (both need its base); when it screens,
    a :class:`Collector` given the keyword arguments makes the collection check."""
    screened = config_and_prompt(layout, config.prompt_file)
    excludes = tuple(p for p in keep_out if p not in screened)
    saved = layout.run_state(run_id, "screen-baseline.json")
    loop = config.loop_policy()
    collector = None
    if loop.screens:
        collector = Collector(
            layout=layout,
            run_id=run_id,
            gate_env={gate.name: gate.env for gate in config.gates},
            commands={gate.name: gate.collect for gate in config.gates if gate.collect},
            grace_s=grace_s,
            policy=policy,
            sandbox=sandbox,
            scratch_sandbox=scratch_sandbox,
            own=own,
        )
    return RunScreen(
        # Pinned gates need the run's base, which the screen records: on when either is.
        on=loop.screens or loop.pins,
        root=layout.root,
        saved=saved,
        own=screened,
        policy=policy,
        excludes=excludes,
        clock=clock,
        collector=collector,
    )


PLUGIN_DIR: Final = Path(__file__).resolve().parent / "_collect_plugin"
"""The folder holding ralph's pytest plugin (``ralph_collect.py``), put on ``PYTHONPATH``, and
its jest reporter (``ralph_collect_jest.cjs``)."""

JEST_REPORTER: Final = PLUGIN_DIR / "ralph_collect_jest.cjs"
"""ralph's jest reporter, given to the gate's jest with ``--reporters``."""

_TOKENED: Final = frozenset({Runner.PYTEST, Runner.JEST})
"""The runners whose collection ralph's own code writes, each line behind a token."""

_MAX_OUTPUT: Final = 32 << 20
"""The most of a collection's output read (32 MiB: some hundred thousand test ids)."""

_SAFE_RUN_ID: Final = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")


_Steps: TypeAlias = tuple[tuple[str, ...], ...]


@final
@frozen(kw_only=True)
class _Plan:
    """How one gate's tests are collected."""

    gate: GateSpec
    runner: Runner
    steps: _Steps
    """The commands run one after another (cargo's second lists the ignored tests)."""


def collect_folder(root: Path, run_id: str) -> Path:
    """Where run ``run_id`` checks its base out to collect its tests, beside the runs'
    worktrees (a sandboxed collection sees it as its workspace)."""
    name = run_id if _SAFE_RUN_ID.fullmatch(run_id) and ".." not in run_id else "run"
    return root.parent / f"{root.name}-worktrees" / f".collect-{name}"


@define(kw_only=True)
class Collector:
    """Collects the tests of a run's gates on its base and its work tree, and compares them.

    ``gate_env`` and ``commands``: each gate's ``env`` and ``collect`` command from the
    configuration, by gate name; ``sandbox``: gives the run's, asked for when needed (None:
    directly); ``scratch_sandbox``: the sandbox a scratch worktree's collection runs in (the
    pinned gates', :meth:`._pinned.Pinning.sandbox_in`)."""

    layout: WorkspaceLayout
    run_id: str
    gate_env: Mapping[str, Mapping[str, str]]
    commands: Mapping[str, tuple[str, ...]]
    grace_s: float
    policy: GitPolicy
    sandbox: Callable[[], Sandbox | None] = lambda: None
    scratch_sandbox: Callable[[Path], Sandbox | None] = lambda _scratch: None
    own: tuple[str, ...] = ()
    """ralph's own files in the workspace, never linked into the base's checkout."""
    _bases: dict[tuple[str, str, _Steps], Collected] = field(factory=dict, init=False)

    def hits(
        self, base: str | None, gates: Sequence[GateSpec], allow: tuple[str, ...] = ()
    ) -> tuple[ScreenHit, ...]:
        """The hits of comparing each collecting gate's tests on ``base`` (None: nothing to
        compare) with those on the work tree; ``allow``: paths whose lost tests never hit."""
        if base is None:
            return ()
        plans = [plan for gate in gates if (plan := self._plan(gate, base)) is not None]
        if not plans:
            return ()
        self._collect_base(base, plans)
        hits: list[ScreenHit] = []
        for plan in plans:
            now = self._collect(plan, self.layout.root, self.sandbox(), "tree")
            was = self._bases[(base, plan.gate.name, plan.steps)]
            hits.extend(lost_by_collection(plan.gate.name, was, now, allow))
        return tuple(hits)

    def _plan(self, gate: GateSpec, base: str) -> _Plan | None:
        command = self.commands.get(gate.name)
        if command:
            return _Plan(gate=gate, runner=Runner.COMMAND, steps=(command,))
        argv = gate.argv
        args = npm_test_args(argv)
        if args is not None:
            # The base's test script, which a pinned gate runs too; on both sides.
            found = package_test_command(self._base_test_script(base), args)
            if found is None:
                return None
            argv = found
        runner = runner_of(argv)
        if runner is None:
            return None
        return _Plan(
            gate=gate, runner=runner, steps=collection_steps(runner, argv, str(JEST_REPORTER))
        )

    def _base_test_script(self, base: str) -> str:
        """``scripts.test`` of the base's ``package.json`` ("" when there is none)."""
        try:
            done = run_git(self.layout.root, "show", f"{base}:package.json", policy=self.policy)
            package = json.loads(done.stdout)
        except (GitError, ValueError, RecursionError):
            return ""
        scripts = package.get("scripts") if isinstance(package, dict) else None
        script = scripts.get("test") if isinstance(scripts, dict) else None
        return script if isinstance(script, str) else ""

    def _collect_base(self, base: str, plans: list[_Plan]) -> None:
        """The base's collections not made yet in this run, made in one scratch checkout."""
        missing = [p for p in plans if (base, p.gate.name, p.steps) not in self._bases]
        if not missing:
            return
        root = self.layout.root
        scratch = collect_folder(root, self.run_id)
        try:
            fresh_scratch(root, scratch, base, self.policy)
        except (GitError, OSError) as error:
            # Not kept: the next screen tries again.
            for plan in missing:
                failed = Collected(failure=f"cannot check the base out: {error}"[:300])
                self._bases[(base, plan.gate.name, plan.steps)] = failed
            return
        try:
            # A sandbox binds the workspace's ralph folder, which a checkout does not hold.
            WorkspaceLayout(root=scratch).ralph_dir.mkdir(exist_ok=True)
            # The runner and the project's dependencies often live in ignored folders
            # (node_modules, .venv, target): linked in, as for the pinned gates.
            try:
                linked = tuple(map(str, link_ignored(root, scratch, self.policy, self.own)))
            except (GitError, OSError):
                linked = ()  # collected without them: a failure there says what was missing
            sandbox = self.scratch_sandbox(scratch)
            for plan in missing:
                found = self._collect(plan, scratch, sandbox, "base", linked)
                self._bases[(base, plan.gate.name, plan.steps)] = found
        finally:
            drop_scratch(root, scratch)

    def _collect(
        self,
        plan: _Plan,
        cwd: Path,
        sandbox: Sandbox | None,
        side: str,
        linked: tuple[str, ...] = (),
    ) -> Collected:
        """One collection of ``plan``'s gate in ``cwd``, run as the gate runs: each step in
        turn, the first that fails the collection's failure; ``linked``: the work tree's
        folders linked into ``cwd``, given to a sandboxed run writable (as in the work tree)."""
        token = secrets.token_hex(16)
        texts: list[str] = []
        for number, argv in enumerate(plan.steps, start=1):
            name = f"collect-{plan.gate.name}-{side}" + (f"-{number}" if number > 1 else "")
            ran = self._step(plan, argv, cwd, (sandbox, linked), name, token)
            if isinstance(ran, Collected):
                return ran
            texts.append(ran)
        match plan.runner:
            case Runner.PYTEST | Runner.JEST:
                return parse_pytest(texts[0], token)
            case Runner.VITEST:
                return parse_vitest(texts[0], str(cwd.resolve()))
            case Runner.GO:
                return parse_go(texts[0])
            case Runner.CARGO:
                return parse_cargo(texts[0], texts[1] if len(texts) > 1 else None)
            case Runner.COMMAND:
                return parse_listed(texts[0])
            case _:
                assert_never(plan.runner)

    def _step(
        self,
        plan: _Plan,
        argv: tuple[str, ...],
        cwd: Path,
        within: tuple[Sandbox | None, tuple[str, ...]],
        name: str,
        token: str,
    ) -> str | Collected:
        """One command of a collection: its output, or the collection's failure."""
        gate = plan.gate
        own = dict(self.gate_env.get(gate.name, {}))
        extra = {**own, "PYTHONDONTWRITEBYTECODE": "1"}
        if plan.runner is Runner.PYTEST:
            path = own.get("PYTHONPATH", os.environ.get("PYTHONPATH", ""))
            extra["PYTHONPATH"] = os.pathsep.join(p for p in (str(PLUGIN_DIR), path) if p)
        if plan.runner in _TOKENED:
            extra["RALPH_COLLECT_TOKEN"] = token
        spec = check_spec(
            self.layout,
            self.run_id,
            name,
            argv,
            {**extra, "RALPH_GATE": gate.name},
            total_s=gate.timeout_s,
            inactivity_s=gate.inactivity_timeout_s,
            grace_s=self.grace_s,
            cwd=cwd,
        )
        log = spec.output_path
        sandbox, linked = within
        result, _ = run_in(sandbox, spec, AgentNeeds(write=linked, set_env=extra))
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
            return Collected(failure=f"exit {result.exit_code}: {last_line(text.encode())}")
        return text
