"""The integrator: the landing's git steps for :func:`~pipeline.engine.integrate` (I/O: git,
processes, files).

It replays a completed run's branch in a scratch worktree, runs the run's final gates there
as a run runs them (the same environment, sandbox and timeouts: the runtime's ``run_gate``,
called directly; pinned as a run's are, to the target's head, unless the run recorded
``pin = "off"``: the world is laid out by the run's own code,
:class:`~pipeline.handlers.runtime.Layering`, in this scratch), and moves the target. Only
a resolver agent at a replay's conflicts runs through a :class:`Runtime`, as a run's agents
do. It reports what git and the gates did; the reducer
folds it, and the landing takes the next step from there.

The scratch worktree is detached, beside the runs' worktrees (``<workspace>-worktrees/
.integration-<run id>``, where a sandboxed gate sees it as a run's worktree, and not inside the
main worktree, which a sandbox hides), and ``ralph worktrees list`` does not show it; the branch
being integrated and its own worktree are never touched by a replay.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Final

from attrs import frozen

from pipeline.core.config import RalphConfig
from pipeline.core.effects import EffectId, InvokeAgent, RunGate
from pipeline.core.state import Integration, IntegrationStatus, PipelineState
from pipeline.events import (
    AgentName,
    Count,
    DevelopmentIterationCompleted,
    Digest,
    GateBoundary,
    GateFinished,
    GateSpec,
    Instant,
    IntegrationGated,
    InvocationSucceeded,
    IterationStatus,
    Ordinal,
    PipelineEvent,
    PromptKind,
    Role,
)
from pipeline.handlers._protocol import facts_of
from pipeline.handlers.agents import stop_recorded_group
from pipeline.handlers.integration._move import move_target
from pipeline.handlers.integration._refs import LOCAL_REFS, TargetRefs
from pipeline.handlers.integration._replay import Resolve, RunCommits, replay_branch
from pipeline.handlers.runtime import (
    CommitWorld,
    GitPolicy,
    Layering,
    Pinning,
    Runtime,
    WorkspaceLayout,
    choose_sandbox,
    fresh_scratch,
    git_out,
    run_gate,
    run_git,
)
from pipeline.orchestration import effect_id, landing_pinned_to

__all__ = ["GRACE_S", "MERGER_HAT", "Integrator", "group_record", "scratch_folder"]

GRACE_S: Final = 5.0
"""How long a gate or merger being stopped gets between SIGTERM and SIGKILL (a run's)."""

MERGER_HAT: Final = "merger"
"""The hat a resolver wears (``RALPH_HAT``); its model and arguments are its agent entry's."""

RUN_ID_PATTERN: Final = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")
"""What a run id must look like to name a scratch folder: it comes from the worktree's own
store, which an agent could have written, and the folder is removed with everything in it."""


def scratch_folder(root: Path, run_id: str) -> Path:
    """Where run ``run_id``'s integration replays its branch, for the repository of ``root``;
    ``ValueError`` for a run id that could name any other folder."""
    if not RUN_ID_PATTERN.fullmatch(run_id) or ".." in run_id:
        raise ValueError(f"run id {run_id!r} cannot name a folder")
    return root.parent / f"{root.name}-worktrees" / f".integration-{run_id}"


def group_record(root: Path, run_id: str) -> Path:
    """Where the process group at work in run ``run_id``'s integration (a gate, the merger)
    is recorded: in the repository's own ralph folder (``.git/ralph``), not in the scratch
    worktree, which is made anew (and which its gate could write), so that the next
    integrator finds and ends what a killed one left running."""
    scratch_folder(root, run_id)  # the same run ids only
    return WorkspaceLayout(root=root).state_dir / "integration" / f"{run_id}.group.json"


@frozen(kw_only=True)
class Integrator:
    """Takes the landing steps of run ``run_id``, whose configuration is ``config``, for the
    repository whose main worktree is ``root``; ``scratch`` is where its branch is replayed;
    ``group_file`` where the process group of its gate or merger at work is recorded (outside
    the scratch: see :func:`group_record`); ``made`` the commits the run's log records, the
    only ones it lands. ``prepare`` readies the scratch worktree for a gate (what the run's
    worktree has that the commit lacks: an untracked gate script); ``refs`` reads and moves
    the target (by default the repository's own branch)."""

    root: Path
    scratch: Path
    group_file: Path
    run_id: str
    config: RalphConfig
    config_digest: Digest
    clock: Callable[[], Instant]
    made: RunCommits
    prepare: Callable[[Path], None] = lambda _scratch: None
    refs: TargetRefs = LOCAL_REFS

    def replay(self, state: PipelineState) -> tuple[PipelineEvent, ...]:
        """Replay the run's branch onto its target's head (the resolver at work, if one is,
        at its conflicts): ``IntegrationRebased``, or why not."""
        now = _under_way(state)
        policy = GitPolicy(sign=self.config.git.sign)
        resolver = now.resolver if now.status is IntegrationStatus.RESOLVING else None
        resolve = None if resolver is None else self._resolver(now, resolver, effect_id(state))
        last = state.ledger.last_commit_sha
        self.refs.refresh(self.root, f"refs/heads/{now.target}")
        where = (self.root, self.scratch, policy, self.clock, self.made)
        return replay_branch(now, last, *where, resolve)

    def move(self, state: PipelineState) -> tuple[PipelineEvent, ...]:
        """Move the target, then the run's branch, to the replayed head."""
        now = _under_way(state)
        self.refs.refresh(self.root, f"refs/heads/{now.target}")
        return move_target(now, self.root, self.scratch, self.clock, self.refs)

    def end_left_behind(self) -> None:
        """End the gate or merger a killed integrator of this run left running (its group as
        recorded, if it is still that group: same host, boot and leader start time); first
        thing, before the scratch worktree it runs in is made anew."""
        stop_recorded_group(self.group_file, GRACE_S)

    def _layout(self) -> WorkspaceLayout:
        """The scratch worktree as a workspace: its gate's or merger's process group recorded
        where the next integrator finds it."""
        self.group_file.parent.mkdir(parents=True, exist_ok=True)
        return WorkspaceLayout(root=self.scratch, group_record=self.group_file)

    def _runtime(self) -> Runtime:
        """The runtime of the scratch worktree, for the merger: it runs there as the run's
        agents run."""
        return Runtime(
            layout=self._layout(),
            config=self.config,
            config_digest=self.config_digest,
            clock=self.clock,
            run_id=self.run_id,
            schemas={},
            hat_schemas={},
            sandboxing=choose_sandbox(self.config, workspace=self.root),
            grace_s=GRACE_S,
        )

    def _resolver(self, now: Integration, agent: AgentName, eid: EffectId) -> Resolve:
        """Has ``agent`` (the ``merger`` hat) at a replay's conflicts: its prompt names them;
        it runs as the run's agents do (sandbox, timeouts, no ralph credentials)."""

        def resolve(paths: tuple[str, ...]) -> bool:
            layout = WorkspaceLayout(root=self.scratch)
            prompt = layout.prompt(PromptKind.DEVELOPMENT)
            prompt.parent.mkdir(parents=True, exist_ok=True)
            prompt.write_text(merger_prompt(now.branch, now.target, paths), "utf-8")
            invoke = InvokeAgent(
                effect_id=eid,
                role=Role.DEVELOPER,
                agent=agent,
                attempt=Ordinal(1),
                prompt_kind=PromptKind.DEVELOPMENT,
                iteration=Count(1),
                review_pass=Count(0),
                events_offset=Count(0),
                events_lines=Count(0),
                response_schema=None,
                hat=MERGER_HAT,
            )
            refs = _refs(self.root)
            try:
                facts = facts_of(self._runtime()(invoke))
            finally:
                # Also when the merger is abandoned (a stop asked for): a request raises
                # once, so this runs to its end.
                moved = _refs(self.root) != refs
                if moved:
                    # The repository's git folder is shared: a branch it moved is put back.
                    _restore(self.root, refs)
            if moved:
                return False
            said = [f.status for f in facts if isinstance(f, DevelopmentIterationCompleted)]
            succeeded = any(isinstance(fact, InvocationSucceeded) for fact in facts)
            return succeeded and said == [IterationStatus.COMPLETED]

        return resolve

    def gate(self, state: PipelineState, spec: GateSpec) -> tuple[PipelineEvent, ...]:
        """Run ``spec`` on the replayed head, pinned as the run's gates were (to the
        target's head it was replayed onto, unless the run recorded ``pin = "off"``)."""
        head, pin = _under_way(state).head, landing_pinned_to(state)
        tamper = None if state.run is None else state.run.loop.tamper
        assert head is not None  # the reducer records it with the replay
        # Made anew for each gate: what an earlier gate (or a killed one) left there goes.
        fresh_scratch(self.root, self.scratch, head)
        if pin is None:
            self.prepare(self.scratch)  # a pinned world is prepared once it is laid out
        gate = RunGate(
            effect_id=effect_id(state),
            gate=spec.name,
            boundary=GateBoundary.FINAL,
            argv=spec.argv,
            timeout_s=spec.timeout_s,
            inactivity_timeout_s=spec.inactivity_timeout_s,
            pin_base=pin,
            test_paths=() if pin is None or tamper is None else tamper.test_paths,
        )
        # As a run runs its gates (its sandbox, the gate's env, the pinned world of the
        # replayed head laid out in the scratch itself), with no whole runtime around it.
        layout = self._layout()
        sandboxing = choose_sandbox(self.config, workspace=self.root)
        sandbox = None
        if sandboxing is not None:
            sandbox = sandboxing.sandbox(layout, self.config, self.run_id, ())
        # Beside the group record, outside the scratch: the gate could write there.
        index = self.group_file.with_name(f"{self.run_id}.gate-index")
        layering = Layering(root=self.root, policy=GitPolicy(), index=index)
        world = CommitWorld(
            layering=layering, scratch=self.scratch, head=head, prepare=self.prepare
        )
        pins = Pinning(world=world, choice=sandboxing, config=self.config)
        env = next((g.env for g in self.config.gates if g.name == spec.name), {})
        try:
            ran = run_gate(gate, layout, self.run_id, env, GRACE_S, self.clock, sandbox, pins)
            facts = facts_of(ran)
        finally:
            world.drop()
        (finished,) = (fact for fact in facts if isinstance(fact, GateFinished))
        return (
            IntegrationGated(
                gate=spec.name,
                head=head,
                status=finished.status,
                exit_code=finished.exit_code,
                tail=finished.tail,
                pinned=finished.pinned,
                restored=finished.restored,
                at=finished.at,
            ),
        )


def _under_way(state: PipelineState) -> Integration:
    """The integration under way (the landing takes a step only then)."""
    assert state.integration is not None
    return state.integration


def _refs(root: Path) -> dict[str, str]:
    """Every ref of the repository, with the object it names."""
    listed = git_out(root, "for-each-ref", "--format=%(refname) %(objectname)")
    return dict(line.rsplit(" ", 1) for line in listed.splitlines() if " " in line)


def _restore(root: Path, refs: dict[str, str]) -> None:
    """Put every ref back as ``refs`` has it: moved ones back, new ones gone, gone ones back."""
    now = _refs(root)
    for ref in now.keys() - refs.keys():
        run_git(root, "update-ref", "-d", ref, policy=GitPolicy(), check=False)
    for ref, sha in refs.items():
        if now.get(ref) != sha:
            run_git(root, "update-ref", ref, sha, policy=GitPolicy(), check=False)


def merger_prompt(branch: str, target: str, paths: tuple[str, ...]) -> str:
    """The prompt for the conflicts in ``paths`` of ``branch``'s replay onto ``target``."""
    listed = "\n".join(f"- `{path}`" for path in paths)
    return f"""# Resolve merge conflicts

The work of branch `{branch}` is being replayed onto `{target}`, one commit at a time, and
this commit conflicts with what `{target}` changed meanwhile. The conflicted files:

{listed}

Edit each of them so that it keeps what both sides meant: the change `{target}` made and the
change this commit makes. Remove every conflict marker (`<<<<<<<`, `=======`, `>>>>>>>`).
Change nothing else unless the resolution needs it.

Do not commit, stage, or run `git rebase`, `git merge` or `git reset`: ralph checks the files,
goes on with the replay, and runs the gates on the result.

When you are done, write `completed` on the first line of `.agent/out/status`, and what you
did on the next. If you cannot resolve a conflict, leave its markers in place, write `failed`
there instead, and why: a person will resolve it.
"""
