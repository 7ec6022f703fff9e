"""The real world's handler: every effect carried out in a git workspace (I/O).

``Runtime`` composes the agent invoker, the git handler and the prompt renderer with the small
handlers for lifecycle facts. It reads the clock and the random jitter, and reports both inside
facts, so that replaying the log needs neither.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Iterator, Mapping
from datetime import datetime, timedelta
from functools import cached_property
from pathlib import Path
from typing import assert_never

from attrs import define, field

from pipeline import PipelineError
from pipeline.core import effects as fx
from pipeline.core.config import RalphConfig
from pipeline.core.effects import ends_after_topics
from pipeline.events import (
    AgentChainExhausted,
    AgentName,
    DevFixTriggered,
    Digest,
    HumanInterventionRequired,
    Instant,
    Json,
    PipelineEvent,
    Role,
    RoleChain,
    RunCompleted,
    RunId,
    RunStarted,
)
from pipeline.handlers._protocol import HandlerResult, facts_of
from pipeline.handlers.intake import end_unfinished_line, read_agent_events, write_marker
from pipeline.handlers.runtime._agents import AgentInvoker
from pipeline.handlers.runtime._finishing import (
    restore_permissions,
    wait_for_answer,
    write_completion_marker,
)
from pipeline.handlers.runtime._gates import run_gate, run_hook, validate
from pipeline.handlers.runtime._git import GitError, GitHandler, ensure_excluded
from pipeline.handlers.runtime._gitcmd import GitPolicy
from pipeline.handlers.runtime._gitguard import GitGuard, restored
from pipeline.handlers.runtime._layout import WorkspaceLayout
from pipeline.handlers.runtime._ownfiles import prompt_protected
from pipeline.handlers.runtime._pinned import GateWorld, Pinning
from pipeline.handlers.runtime._prompting import digest_of, intake_limits, materialize
from pipeline.handlers.runtime._reports import collect_report
from pipeline.handlers.runtime._run_setup import (
    PromptSource,
    agent_environment,
    new_run_id,
    own_paths,
)
from pipeline.handlers.runtime._sandboxing import SandboxChoice, git_policy_in
from pipeline.handlers.runtime._schemas import load_hat_schemas, load_response_schemas
from pipeline.handlers.runtime._screening import RunScreen, run_screen
from pipeline.handlers.runtime._waits import back_off, runtime_spent, wait_for_reset
from pipeline.handlers.store import Inbox

__all__ = ["Runtime"]


_KEPT_OUT_FILE = "kept-out"
"""The file in a run's folder listing the paths its commits leave alone (read on resume)."""


@define(kw_only=True)
class Runtime:
    """An :class:`~pipeline.handlers.EffectHandler` for every effect, in a real workspace.

    ``run_id`` is None until ``StartRun`` makes one; a resumed run passes its own.
    """

    layout: WorkspaceLayout
    config: RalphConfig
    config_digest: Digest
    clock: Callable[[], Instant]
    prompt: PromptSource | None = None
    run_id: str | None = None
    deadline: datetime | None = None
    """When the runtime budget is spent; by default ``max_runtime_s`` from now, so that a
    resumed run gets its budget afresh (None with no runtime budget)."""
    rng: random.Random = field(factory=random.Random)
    sleep: Callable[[float], None] = time.sleep
    grace_s: float = 5.0
    schemas: Mapping[Role, Json] | None = None
    """The hats' response schemas as already loaded and checked (see
    :func:`load_response_schemas`); None: loaded (and checked) when the runtime is made."""
    hat_schemas: Mapping[str, Json] | None = None
    """A topology's hats' response schemas, likewise (:func:`load_hat_schemas`)."""
    prompt_mode: int | None = None
    """The prompt file's mode before an earlier run that never finished made it read-only:
    the mode this run gives back at its end (None: the mode the file has now)."""
    answers: Inbox | None = None
    """Where people's answers are kept (the run's event store); None: no answer ever comes,
    and a question waits until its deadline."""
    own_files: tuple[Path, ...] = ()
    """Files of ralph's that may lie in the work tree and are never committed (a SQLite store
    named by path; its ``-wal``, ``-shm`` and ``-journal`` files are kept out too)."""
    kept_paths: tuple[str, ...] = ()
    """Paths (relative to the workspace) ralph's commits leave alone: the person's own
    uncommitted changes when a run started on a dirty tree (``--allow-dirty``)."""
    _guard: GitGuard | None = field(default=None, init=False)
    """The snapshot of the repository's git files, taken as the run starts or is resumed
    (None outside a repository)."""
    sandboxing: SandboxChoice | None = None  # where agents run; None: directly
    hand_back: Callable[[Instant], None] | None = None
    """A queue worker's: told of a long wait for a limit's reset (see ``wait_for_reset``)."""

    def __attrs_post_init__(self) -> None:
        source = str(self.layout.config)
        if self.schemas is None:
            self.schemas = load_response_schemas(self.config, self.layout.root, source)
        if self.hat_schemas is None:
            self.hat_schemas = load_hat_schemas(self.config, self.layout.root, source)
        if self.run_id is not None:
            # A resumed run: the repository's git files as it finds them are what counts.
            self._guard = self._take_guard()
            kept = self.layout.run_state(self.run_id, _KEPT_OUT_FILE)
            if not self.kept_paths and kept.is_file():
                self.kept_paths = tuple(p for p in kept.read_text("utf-8").split("\0") if p)
        limit = self.config.budgets.max_runtime_s
        if self.deadline is None and limit is not None:
            self.deadline = self.clock() + timedelta(seconds=limit)

    def __call__(self, effect: fx.Effect) -> HandlerResult:
        """Carry out ``effect`` in the workspace and report what happened (an agent's
        invocation in two steps: its start, then the rest)."""
        now = self.clock
        match effect:
            case fx.StartRun():
                return self._start()
            case fx.Begin():
                spent = self._spent() if fx.measures_runtime(effect) else ()
                return spent or (fx.started(effect, now()),)
            case fx.MaterializePrompt():
                return materialize(effect, self.layout, self.config, self._run_id(), self.clock)
            case fx.InvokeAgent():
                return self._invoke(effect)
            case fx.BackOff():
                return back_off(effect, self.rng, self.sleep, now)
            case fx.WaitForLimitReset():
                return wait_for_reset(effect, self.sleep, now, self.hand_back)
            case fx.SaveCheckpoint():
                raise PipelineError("checkpoints are saved by the runner, never by a handler")
            case fx.RunHook():
                # As gates run: in the agents' sandbox, a blocking one pinned as they are.
                hook = (self.layout, self._run_id(), self.grace_s, now)
                return run_hook(effect, *hook, self._invoker.sandbox, self._pinning)
            case fx.CreateCommit():
                # Checked again just before: a process the agent left behind may have written.
                return (*self._undo_git_changes(), *self._git().commit(effect))
            case fx.Rebase():
                rebased = (*self._undo_git_changes(), *self._git().rebase(effect))
                self._rewrote_work_tree()
                return (*rebased, *self._screen.rebased(rebased, effect.onto))
            case fx.AbortRebase():
                aborted = self._git().abort(effect)
                self._rewrote_work_tree()
                return aborted
            case fx.RunGate():
                # Its env comes from the configuration: it may hold secrets, never recorded.
                env = next((g.env for g in self.config.gates if g.name == effect.gate), {})
                gate = (self.layout, self._run_id(), env, self.grace_s, now)
                where = (self._invoker.sandbox, self._pinning)
                return self._spent() or run_gate(effect, *gate, *where)
            case fx.ScreenChanges():
                return self._screen.changes(effect)
            case fx.ValidateFinalState():
                return validate(
                    self.config.validate,
                    self.layout,
                    self._run_id(),
                    self.grace_s,
                    self.clock,
                    self._invoker.sandbox,
                )
            case fx.TriggerDevFix():
                return (
                    AgentChainExhausted(role=effect.failed_role, at=now()),
                    DevFixTriggered(failed_role=effect.failed_role, reason=effect.reason, at=now()),
                )
            case fx.WriteCompletionMarker():
                return write_completion_marker(effect, self.layout, self.clock)
            case fx.CollectReport():
                return collect_report(effect, self.layout, self.clock)
            case fx.RequireHuman():
                return (
                    HumanInterventionRequired(reason=effect.reason, detail=effect.detail, at=now()),
                )
            case fx.WaitForHuman():
                run_id = RunId(self._run_id())
                return wait_for_answer(effect, run_id, self.answers, self.clock, self.sleep)
            case fx.RestorePromptPermissions():
                return restore_permissions(effect, self.layout, self.clock)
            case fx.CompleteRun():
                self._pinning.world.drop()  # the run is over: its gates' scratch goes
                return (RunCompleted(reason=effect.reason, at=now()),)
            case fx.Terminate():
                return ()
            case _:
                assert_never(effect)

    def _run_id(self) -> str:
        if self.run_id is None:
            raise PipelineError("the run has not started: fx.StartRun comes first")
        return self.run_id

    def _invoke(self, effect: fx.InvokeAgent) -> Iterator[tuple[PipelineEvent, ...]]:
        """The agent's start, recorded before its process starts; then, once it has exited,
        its outcome, what it appended to the events file (complete now) and the git files it
        changed put back."""
        if self._guard is not None:
            self._guard.began()  # a protected path there now is no agent's making
        steps = self._invoker(effect)
        yield next(steps)
        outcome = facts_of(steps)
        events_file = self.layout.events_file(self._run_id())
        end_unfinished_line(events_file)  # the agent is gone: its last line is its own
        offset, lines = effect.events_offset, effect.events_lines
        limits = intake_limits(self.config)
        read = read_agent_events(events_file, offset, lines, self.clock, limits)
        yield ends_after_topics(effect, (*outcome, *read, *self._undo_git_changes()))

    @cached_property
    def _invoker(self) -> AgentInvoker:
        """The invoker of this run's agents, hats and prices, running its agents as the
        sandbox chosen at the start decided (None: directly)."""
        run_id, choice = self._run_id(), self.sandboxing
        sandbox = None
        if choice is not None:  # own_files: a store in the work tree, which it keeps out
            sandbox = choice.sandbox(self.layout, self.config, run_id, self.own_files)
        return AgentInvoker(
            layout=self.layout,
            run_id=run_id,
            agents=self.config.agents,
            hats=self.config.hats,
            environment=agent_environment(self.layout, run_id),
            clock=self.clock,
            grace_s=self.grace_s,
            price_for=self.config.price_for,
            sandbox=sandbox,
            choice=choice,
            mcp=self.config.mcp.agents,
        )

    @cached_property
    def _git_policy(self) -> GitPolicy:
        """``[git]``, the hooks and filters it allows run in the run's sandbox."""
        return git_policy_in(self.sandboxing, self.layout, self.config, self.own_files)

    def _git(self) -> GitHandler:
        return GitHandler(
            root=self.layout.root,
            clock=self.clock,
            keep_out=self._keep_out(),
            policy=self._git_policy,
        )

    @cached_property
    def _screen(self) -> RunScreen:
        """The screen of this run's changes (:func:`run_screen`), made once: its collector
        keeps the base's collections for the run."""
        at = (self.layout, self.config, self._run_id(), self._keep_out(), self._git_policy)
        return run_screen(
            *at,
            self.clock,
            grace_s=self.grace_s,
            sandbox=lambda: self._invoker.sandbox,
            scratch_sandbox=self._pinning.sandbox_in,
            own=own_paths(self.layout, self.config.prompt_file, self.own_files),
        )

    @cached_property
    def _pinning(self) -> Pinning:
        """Where this run's pinned gates and blocking hooks run: its own scratch worktree, in
        the sandbox its agents run in."""
        run_id = self._run_id()
        world = GateWorld(
            root=self.layout.root,
            run_id=run_id,
            policy=self._git_policy,
            own=own_paths(self.layout, self.config.prompt_file, self.own_files),
            index=self.layout.run_state(run_id, "gate-index"),
        )
        return Pinning(world=world, choice=self.sandboxing, config=self.config)

    def _take_guard(self) -> GitGuard | None:
        """The guard's snapshot of the repository as it is now, keeping the protected paths
        too where agents run in the sandbox (which binds them read-only where they exist)."""
        choice = self.sandboxing
        if choice is None or choice.probe is None:
            return GitGuard.take(self.layout.root)
        return GitGuard.take(self.layout.root, choice.policy.protect)

    def _undo_git_changes(self) -> tuple[PipelineEvent, ...]:
        """``GitMetadataRestored`` when an agent changed the repository's git configuration,
        hooks or ``info/`` (all put back as the run found them), else nothing."""
        return restored(self._guard, self.clock)

    def _rewrote_work_tree(self) -> None:
        """Take the guard's snapshot again after ralph's own git moved the work tree: the
        base's agent CLI settings are the run's from then on, not an agent's change."""
        if self._guard is not None:
            self._guard.refresh()

    def _keep_out(self) -> tuple[str, ...]:
        """ralph's own files inside the repository, which no commit may take, and the paths
        the person kept out (``kept_paths``)."""
        own = own_paths(self.layout, self.config.prompt_file, self.own_files)
        return tuple(dict.fromkeys((*own, *self.kept_paths)))

    def _spent(self) -> tuple[PipelineEvent, ...]:
        """``BudgetExceeded`` when the runtime budget is spent (checked as each phase or
        iteration begins), else nothing."""
        return runtime_spent(self.deadline, self.config.budgets.max_runtime_s, self.clock)

    def _start(self) -> tuple[PipelineEvent, ...]:
        """Make the run id, keep a copy of the prompt, protect the prompt file."""
        source = self.prompt
        if source is None:
            raise PipelineError("a new run needs a prompt text or a prompt file")
        data = source.read()
        started = self.clock()
        run_id = new_run_id(started)
        self.run_id = run_id
        layout = self.layout
        saved = layout.saved_prompt(run_id)
        saved.parent.mkdir(parents=True, exist_ok=True)
        saved.write_bytes(data)
        if self.kept_paths:
            # A resume reads them back: the person's changes stay out of every commit.
            kept = layout.run_state(run_id, _KEPT_OUT_FILE)
            kept.write_text("\0".join(self.kept_paths), "utf-8")
        layout.events_file(run_id).touch()
        write_marker(layout.root, layout.events_file(run_id))
        try:
            ensure_excluded(layout.root)
        except GitError as error:
            raise PipelineError(
                f"{layout.root} is not usable as a git workspace: {error}"
            ) from error
        # What the run found, with ralph's own exclusions in it: every later change is undone.
        self._guard = self._take_guard()
        budget = self.config.budgets.to_budget()
        chains = tuple(
            RoleChain(role=role, agents=tuple(AgentName(a) for a in self.config.chain_for(role)))
            for role in Role
        )
        start = RunStarted(
            run_id=RunId(run_id),
            config_digest=self.config_digest,
            prompt_digest=digest_of(data),
            budget=budget,
            chains=chains,
            rebase_onto=self.config.rebase_onto,
            loop=self.config.loop_policy(self.schemas or {}, self.hat_schemas or {}),
            at=started,
        )
        facts: list[PipelineEvent] = [start]
        if source.path is not None:
            root, mode = layout.root, self.prompt_mode
            protected = prompt_protected(root, source.path, mode, self.clock)
            facts.extend(() if protected is None else (protected,))
        facts.extend(self.sandbox_checked(started))
        facts.extend(self._screen.started())
        return tuple(facts)

    def sandbox_checked(self, at: Instant) -> tuple[PipelineEvent, ...]:
        """What the run's agents run in, as a fact (none with no sandbox chosen), checked
        when the run starts and again when it resumes: the machine may have changed."""
        if self.sandboxing is None:
            return ()
        environment = agent_environment(self.layout, self._run_id())
        return self.sandboxing.checked(environment, at)
