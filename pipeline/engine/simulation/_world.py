"""A simulated world: handlers for every effect with outcomes chosen by a :class:`Chooser`.

It stands in for agents, git and people in the demo and in property tests. Every choice it makes
(an agent's outcome, a review verdict, a backoff jitter) goes through the chooser, so a seeded
random chooser gives a repeatable demo and a hypothesis chooser lets hypothesis explore worlds.
Time comes from an injected clock. It is a model, not I/O: it lives beside the handlers, not
among them.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import assert_never

from attrs import define, field

from pipeline.core import effects as fx
from pipeline.core.effects import ends_after_topics
from pipeline.engine.simulation._agent_facts import limited, usage
from pipeline.engine.simulation._choosers import Chooser
from pipeline.engine.simulation._config import (
    SIMULATED_RESPONSES,
    SPECIAL_TOPICS,
    AgentOutcome,
    WorldConfig,
    _digest,
    fake_clock,
    topology_topics,
)
from pipeline.events import (
    AgentChainExhausted,
    BackoffWaited,
    ChangesScreened,
    CheckpointSaved,
    CommitCreated,
    CommitMessageGenerated,
    CommitSkipped,
    CompletionMarkerEmitted,
    Count,
    DevelopmentIterationCompleted,
    DevFixCompleted,
    DevFixTriggered,
    DurationMs,
    ErrorKind,
    EventsFileRead,
    ExitCode,
    FinalValidationFailed,
    FinalValidationPassed,
    FixAttemptCompleted,
    GateFinished,
    GateStarted,
    GateStatus,
    HookRan,
    HumanInterventionRequired,
    HumanQuestionAsked,
    HumanResponseReceived,
    HumanTimedOut,
    Instant,
    InvocationFailed,
    InvocationStarted,
    InvocationSucceeded,
    InvocationTimedOut,
    IterationStatus,
    Json,
    LimitResetAwaited,
    LogPosition,
    Ordinal,
    OutputLineMalformed,
    PipelineEvent,
    PlanProduced,
    PlanRejected,
    PromptFileProtected,
    PromptKind,
    PromptMaterialized,
    PromptPermissionsRestored,
    QuestionId,
    RebaseAborted,
    RebaseConflicted,
    RebaseStarted,
    RebaseSucceeded,
    ReviewClean,
    ReviewIssuesFound,
    Role,
    RunCompleted,
    RunId,
    RunStarted,
    ScreenBaseRecorded,
    ScreenHit,
    ScreenKind,
    TimeoutKind,
    TopicPublished,
)
from pipeline.events.values import MAX_COUNT
from pipeline.handlers.responses import judged

SCREEN_FINDINGS: tuple[tuple[ScreenHit, ...], ...] = (
    (),
    (
        ScreenHit(
            kind=ScreenKind.TEST_REMOVED,
            path="tests/test_app.py",
            line=Count(0),
            detail="1 test fewer",
        ),
    ),
    (ScreenHit(kind=ScreenKind.TODO_ADDED, path="src/app.py", line=Count(3), detail="# TODO"),),
    (
        ScreenHit(
            kind=ScreenKind.SCREEN_INCOMPLETE, path=".", line=Count(0), detail="over 5000 files"
        ),
    ),
)
"""What a simulated screen finds: nothing, a tamper hit, a postcondition's, a cut-short screen."""


@define(kw_only=True)
class SimulatedWorld:
    """An :class:`~pipeline.handlers.EffectHandler` for every effect, with chosen outcomes."""

    config: WorldConfig
    chooser: Chooser
    clock: Callable[[], Instant] = field(factory=fake_clock)

    def __call__(self, effect: fx.Effect) -> Sequence[PipelineEvent]:
        """Carry out ``effect`` in the simulated world."""
        now = self.clock
        match effect:
            case fx.StartRun():
                c = self.config
                return (
                    RunStarted(
                        run_id=RunId(c.run_id),
                        config_digest=_digest("config"),
                        prompt_digest=_digest("prompt"),
                        budget=c.budget,
                        chains=c.chains,
                        rebase_onto=c.rebase_onto,
                        loop=c.loop,
                        at=now(),
                    ),
                    PromptFileProtected(path="PROMPT.md", original_mode=Count(0o644), at=now()),
                    *((ScreenBaseRecorded(sha=None, at=now()),) if c.loop.screens else ()),
                )
            case fx.Begin():
                return (fx.started(effect, now()),)
            case fx.MaterializePrompt():
                path = f".agent/prompts/{effect.kind.value}.md"
                return (
                    PromptMaterialized(
                        kind=effect.kind,
                        path=path,
                        content_digest=_digest(effect.effect_id),
                        at=now(),
                    ),
                )
            case fx.InvokeAgent():
                return self._invoke(effect)
            case fx.BackOff():
                delay = self.chooser.number(0, effect.ceiling_ms, "backoff jitter")
                return (BackoffWaited(role=effect.role, delay_ms=DurationMs(delay), at=now()),)
            case fx.WaitForLimitReset():
                return (LimitResetAwaited(role=effect.role, until=effect.until, at=now()),)
            case fx.SaveCheckpoint():
                # Never asked by a runner (it saves checkpoints itself); the world answers it
                # as a runner would for code that drives the world directly (the graph's
                # exploration, workloads).
                return (
                    CheckpointSaved(
                        trigger=effect.trigger, sequence=LogPosition(effect.sequence), at=now()
                    ),
                )
            case fx.RunHook():
                return (self._hook(effect),)
            case fx.CreateCommit():
                if self.chooser.pick((True, False), "changes to commit"):
                    sha = _digest(effect.effect_id)[:40]
                    return (CommitCreated(sha=sha, branch="main", at=now()),)
                return (CommitSkipped(reason="no changes", at=now()),)
            case fx.Rebase():
                started = RebaseStarted(onto=effect.onto, at=now())
                if self.chooser.pick((True, False), "rebase clean"):
                    return (started, RebaseSucceeded(head=_digest(effect.effect_id)[:40], at=now()))
                return (started, RebaseConflicted(paths=("src/app.py",), at=now()))
            case fx.AbortRebase():
                return (RebaseAborted(at=now()),)
            case fx.RunGate():
                return self._gate(effect)
            case fx.ScreenChanges():
                hits = self.chooser.pick(SCREEN_FINDINGS, "screen hits")
                return (
                    ChangesScreened(
                        scope=effect.scope, base=effect.base, files=Count(3), hits=hits, at=now()
                    ),
                )
            case fx.ValidateFinalState():
                if self.chooser.pick((True, False), "validation passes"):
                    return (FinalValidationPassed(at=now()),)
                return (FinalValidationFailed(reason="tests failed", at=now()),)
            case fx.TriggerDevFix():
                return (
                    AgentChainExhausted(role=effect.failed_role, at=now()),
                    DevFixTriggered(failed_role=effect.failed_role, reason=effect.reason, at=now()),
                )
            case fx.WriteCompletionMarker():
                path = ".agent/tmp/completion_marker"
                return (
                    CompletionMarkerEmitted(
                        path=path, status=effect.status, reason=effect.reason, at=now()
                    ),
                )
            case fx.CollectReport():
                return self._output(effect)
            case fx.RequireHuman():
                return (
                    HumanInterventionRequired(reason=effect.reason, detail=effect.detail, at=now()),
                )
            case fx.WaitForHuman():
                if effect.question_id is None:
                    # The simulated world is deterministic: the id comes from the effect's.
                    asked = QuestionId(f"q-{effect.effect_id}")
                    return (
                        HumanQuestionAsked(
                            question_id=asked,
                            question=effect.question,
                            deadline=effect.deadline,
                            at=now(),
                        ),
                    )
                if self.chooser.pick((True, False), "human answers"):
                    return (
                        HumanResponseReceived(
                            question_id=effect.question_id, text="go ahead", at=now()
                        ),
                    )
                return (HumanTimedOut(question_id=effect.question_id, at=now()),)
            case fx.RestorePromptPermissions():
                return (PromptPermissionsRestored(path=effect.path or "", at=now()),)
            case fx.CompleteRun():
                return (RunCompleted(reason=effect.reason, at=now()),)
            case fx.Terminate():
                return ()
            case _:
                assert_never(effect)

    def _gate(self, effect: fx.RunGate) -> Sequence[PipelineEvent]:
        """The gate's start and how it ended (passing, mostly)."""
        now = self.clock
        status = self.chooser.pick(tuple(GateStatus), "gate status")
        code = {GateStatus.PASSED: 0, GateStatus.FAILED: 1}.get(status)
        finished = GateFinished(
            gate=effect.gate,
            boundary=effect.boundary,
            argv=effect.argv,
            status=status,
            exit_code=None if code is None else ExitCode(code),
            duration_ms=DurationMs(1200),
            output_digest=_digest(effect.effect_id),
            log_path=f".ralph/logs/gate-{effect.gate}.log",
            tail="" if status is GateStatus.PASSED else "1 failed, 3 passed",
            at=now(),
        )
        return (GateStarted(gate=effect.gate, boundary=effect.boundary, at=now()), finished)

    def _hook(self, effect: fx.RunHook) -> HookRan:
        """How the hook ended (passing, as the chooser's first option)."""
        status = self.chooser.pick(tuple(GateStatus), "hook status")
        code = {GateStatus.PASSED: 0, GateStatus.FAILED: 1}.get(status)
        hook = effect.hook
        return HookRan(
            hook=hook.name,
            point=hook.point,
            argv=hook.argv,
            status=status,
            exit_code=None if code is None else ExitCode(code),
            duration_ms=DurationMs(5),
            tail="" if status is GateStatus.PASSED else "the hook failed",
            at=self.clock(),
        )

    def _invoke(self, effect: fx.InvokeAgent) -> Sequence[PipelineEvent]:
        """The invocation's outcome, then what the agent wrote to its events file meanwhile
        (the real handler reads the file once the agent has exited)."""
        now, choose = self.clock, self.chooser
        role, agent = effect.role, effect.agent
        started = InvocationStarted(
            role=role, agent=agent, model=effect.model, attempt=Ordinal(effect.attempt), at=now()
        )
        outcome = choose.pick(tuple(AgentOutcome), f"{role.value} outcome")
        if outcome is AgentOutcome.FATAL_FAILURE:
            failed = InvocationFailed(
                role=role,
                agent=agent,
                error=ErrorKind.NOT_FOUND,
                message="not installed",
                retriable=False,
                at=now(),
            )
            return (started, failed)
        begun: tuple[PipelineEvent, ...] = (started, *usage(effect, choose, now))
        if outcome is AgentOutcome.RETRIABLE_FAILURE:
            # Each attempt fails its own way: the same message twice is a permanent failure.
            message = f"exit status 1 (attempt {effect.attempt})"
            failed = InvocationFailed(
                role=role,
                agent=agent,
                error=ErrorKind.NON_ZERO_EXIT,
                message=message,
                retriable=True,
                at=now(),
            )
            return (*begun, failed, *self._intake(effect))
        if outcome is AgentOutcome.PROVIDER_LIMITED:
            return (*begun, limited(effect, choose, now), *self._intake(effect))
        if outcome is AgentOutcome.TIMEOUT:
            timed_out = InvocationTimedOut(
                role=role,
                agent=agent,
                kind=TimeoutKind.INACTIVITY,
                after_ms=DurationMs(60_000),
                at=now(),
            )
            return (*begun, timed_out, *self._intake(effect))
        succeeded = InvocationSucceeded(
            role=role,
            agent=agent,
            exit_code=ExitCode(0),
            duration_ms=DurationMs(1500),
            output_digest=_digest(effect.effect_id),
            at=now(),
        )
        if effect.response_schema is not None:
            # The role's report is collected only once its structured response is accepted.
            raw = choose.pick(SIMULATED_RESPONSES, "structured response")
            answered = judged(role, raw, effect.response_schema, now())
            return (*begun, succeeded, answered, *self._intake(effect))
        facts = (*begun, succeeded, *self._output(effect), *self._intake(effect))
        return ends_after_topics(effect, facts)

    def _intake(self, effect: fx.InvokeAgent) -> tuple[PipelineEvent, ...]:
        """The lines the agent appended, numbered on from where the log says reading stopped."""
        count = self.chooser.number(0, 3, "lines written to the events file")
        events: list[PipelineEvent] = []
        offset: int = effect.events_offset
        line: int = effect.events_lines
        if line + count > MAX_COUNT or offset + 1_000 * count > MAX_COUNT:
            # Only an injected position gets here: a file that long holds no more lines.
            count = 0
        for index in range(count):
            line += 1
            if self.chooser.pick((True, False), "line well formed"):
                topic, payload = self._topic(effect, index)
                published = TopicPublished(
                    topic=topic,
                    payload=payload,
                    line_number=Ordinal(line),
                    emitted_at=None,
                    at=self.clock(),
                )
                events.append(published)
                offset += len(topic) + len(payload.text) + 30
            else:
                content = f"not json {index}"
                error = "invalid JSON: unexpected character"
                events.append(
                    OutputLineMalformed(
                        line_number=Ordinal(line), content=content, error=error, at=self.clock()
                    )
                )
                offset += len(content) + 1
        if count:
            events.append(EventsFileRead(offset=Count(offset), lines=Count(line), at=self.clock()))
        return tuple(events)

    def _topic(self, effect: fx.InvokeAgent, index: int) -> tuple[str, Json]:
        """A progress report, unique to this line, or now and then a loop-control topic; a
        topology's hat mostly hands work on with a topic some hat triggers on."""
        topology = self.config.loop.topology
        if topology is not None and self.chooser.pick((True, False), "a topology's topic"):
            known = topology_topics(topology)
            which = self.chooser.number(0, len(known) - 1, "which topology topic")
            return known[which], Json.of(f"{effect.effect_id}: line {index + 1}")
        if self.chooser.pick((False, True), "a loop-control topic"):
            which = self.chooser.number(0, len(SPECIAL_TOPICS) - 1, "which loop-control topic")
            topic, value = SPECIAL_TOPICS[which]
            return topic, Json.of(value)
        text = f"{effect.effect_id}: step {index + 1} of attempt {effect.attempt}"
        return f"{effect.role.value}.progress", Json.of(text)

    def _output(self, effect: fx.InvokeAgent | fx.CollectReport) -> tuple[PipelineEvent, ...]:
        now, choose = self.clock, self.chooser
        role = effect.role
        if role is Role.PLANNER:
            if choose.pick((True, False), "plan usable"):
                plan = _digest(f"plan {effect.effect_id}")
                return (
                    PlanProduced(
                        iteration=Ordinal(effect.iteration + 1), plan_digest=plan, at=now()
                    ),
                )
            return (PlanRejected(reason="the plan has no steps", at=now()),)
        if role is Role.DEVELOPER and effect.prompt_kind is PromptKind.REVIEW_FIX:
            status = choose.pick(tuple(IterationStatus), "fix status")
            return (
                FixAttemptCompleted(
                    review_pass=Ordinal(effect.review_pass), status=status, at=now()
                ),
            )
        if role is Role.DEVELOPER:
            status = choose.pick(tuple(IterationStatus), "iteration status")
            return (
                DevelopmentIterationCompleted(
                    iteration=Ordinal(effect.iteration),
                    status=status,
                    summary=f"iteration {effect.iteration}",
                    at=now(),
                ),
            )
        if role is Role.REVIEWER:
            issues = choose.number(0, 3, "review issues")
            if issues == 0:
                return (ReviewClean(review_pass=Ordinal(effect.review_pass), at=now()),)
            return (
                ReviewIssuesFound(
                    review_pass=Ordinal(effect.review_pass), count=Count(issues), at=now()
                ),
            )
        if role is Role.COMMITTER:
            return (
                CommitMessageGenerated(
                    message=f"Iteration {effect.iteration}: simulated change", at=now()
                ),
            )
        success = choose.pick((True, False), "dev-fix succeeds")
        return (DevFixCompleted(success=success, summary="diagnosed the failing agent", at=now()),)
