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

from pipeline.core.effects import (
    AbortRebase,
    BackOff,
    BeginActivation,
    BeginFinalizing,
    BeginFixAttempt,
    BeginIteration,
    BeginPlanning,
    BeginReviewPass,
    CollectReport,
    CompleteRun,
    CreateCommit,
    Effect,
    InvokeAgent,
    MaterializePrompt,
    Rebase,
    RequireHuman,
    RestorePromptPermissions,
    RunGate,
    SaveCheckpoint,
    ScreenChanges,
    StartRun,
    Terminate,
    TriggerDevFix,
    ValidateFinalState,
    WaitForHuman,
    WaitForLimitReset,
    WriteCompletionMarker,
    ends_after_topics,
)
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
    DevelopmentIterationStarted,
    DevFixCompleted,
    DevFixTriggered,
    DurationMs,
    ErrorKind,
    EventsFileRead,
    ExitCode,
    FinalizingStarted,
    FinalValidationFailed,
    FinalValidationPassed,
    FixAttemptCompleted,
    FixAttemptStarted,
    GateFinished,
    GateStarted,
    GateStatus,
    HatActivated,
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
    PlanningStarted,
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
    ReviewPassStarted,
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
    (ScreenHit(ScreenKind.TEST_REMOVED, "tests/test_app.py", Count(0), "1 test fewer"),),
    (ScreenHit(ScreenKind.TODO_ADDED, "src/app.py", Count(3), "# TODO"),),
    (ScreenHit(ScreenKind.SCREEN_INCOMPLETE, ".", Count(0), "over 5000 files"),),
)
"""What a simulated screen finds: nothing, a tamper hit, a postcondition's, a cut-short screen."""


@define
class SimulatedWorld:
    """An :class:`~pipeline.handlers.EffectHandler` for every effect, with chosen outcomes."""

    config: WorldConfig
    chooser: Chooser
    clock: Callable[[], Instant] = field(factory=fake_clock)

    def __call__(self, effect: Effect) -> Sequence[PipelineEvent]:
        """Carry out ``effect`` in the simulated world."""
        now = self.clock
        match effect:
            case StartRun():
                c = self.config
                return (
                    RunStarted(
                        RunId(c.run_id),
                        _digest("config"),
                        _digest("prompt"),
                        c.budget,
                        c.chains,
                        c.rebase_onto,
                        c.loop,
                        now(),
                    ),
                    PromptFileProtected("PROMPT.md", Count(0o644), now()),
                    *((ScreenBaseRecorded(None, now()),) if c.loop.screens else ()),
                )
            case BeginPlanning():
                return (PlanningStarted(now()),)
            case BeginIteration():
                return (DevelopmentIterationStarted(Ordinal(effect.iteration), now()),)
            case BeginActivation():
                return (HatActivated(Ordinal(effect.iteration), effect.hat, effect.topic, now()),)
            case BeginReviewPass():
                return (ReviewPassStarted(Ordinal(effect.review_pass), now()),)
            case BeginFixAttempt():
                return (FixAttemptStarted(Ordinal(effect.review_pass), now()),)
            case BeginFinalizing():
                return (FinalizingStarted(now()),)
            case MaterializePrompt():
                path = f".agent/prompts/{effect.kind.value}.md"
                return (PromptMaterialized(effect.kind, path, _digest(effect.effect_id), now()),)
            case InvokeAgent():
                return self._invoke(effect)
            case BackOff():
                delay = self.chooser.number(0, effect.ceiling_ms, "backoff jitter")
                return (BackoffWaited(effect.role, DurationMs(delay), now()),)
            case WaitForLimitReset():
                return (LimitResetAwaited(effect.role, effect.until, now()),)
            case SaveCheckpoint():
                # Never asked by a runner (it saves checkpoints itself); the world answers it
                # as a runner would for code that drives the world directly (the graph's
                # exploration, workloads).
                return (CheckpointSaved(effect.trigger, LogPosition(effect.sequence), now()),)
            case CreateCommit():
                if self.chooser.pick((True, False), "changes to commit"):
                    sha = _digest(effect.effect_id)[:40]
                    return (CommitCreated(sha, "main", now()),)
                return (CommitSkipped("no changes", now()),)
            case Rebase():
                started = RebaseStarted(effect.onto, now())
                if self.chooser.pick((True, False), "rebase clean"):
                    return (started, RebaseSucceeded(_digest(effect.effect_id)[:40], now()))
                return (started, RebaseConflicted(("src/app.py",), now()))
            case AbortRebase():
                return (RebaseAborted(now()),)
            case RunGate():
                return self._gate(effect)
            case ScreenChanges():
                hits = self.chooser.pick(SCREEN_FINDINGS, "screen hits")
                return (ChangesScreened(effect.scope, effect.base, Count(3), hits, now()),)
            case ValidateFinalState():
                if self.chooser.pick((True, False), "validation passes"):
                    return (FinalValidationPassed(now()),)
                return (FinalValidationFailed("tests failed", now()),)
            case TriggerDevFix():
                return (
                    AgentChainExhausted(effect.failed_role, now()),
                    DevFixTriggered(effect.failed_role, effect.reason, now()),
                )
            case WriteCompletionMarker():
                path = ".agent/tmp/completion_marker"
                return (CompletionMarkerEmitted(path, effect.status, effect.reason, now()),)
            case CollectReport():
                return self._output(effect)
            case RequireHuman():
                return (HumanInterventionRequired(effect.reason, effect.detail, now()),)
            case WaitForHuman():
                if effect.question_id is None:
                    # The simulated world is deterministic: the id comes from the effect's.
                    asked = QuestionId(f"q-{effect.effect_id}")
                    return (HumanQuestionAsked(asked, effect.question, effect.deadline, now()),)
                if self.chooser.pick((True, False), "human answers"):
                    return (HumanResponseReceived(effect.question_id, "go ahead", now()),)
                return (HumanTimedOut(effect.question_id, now()),)
            case RestorePromptPermissions():
                return (PromptPermissionsRestored(effect.path or "", now()),)
            case CompleteRun():
                return (RunCompleted(effect.reason, now()),)
            case Terminate():
                return ()
            case _:
                assert_never(effect)

    def _gate(self, effect: RunGate) -> Sequence[PipelineEvent]:
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
        return (GateStarted(effect.gate, effect.boundary, now()), finished)

    def _invoke(self, effect: InvokeAgent) -> Sequence[PipelineEvent]:
        """The invocation's outcome, then what the agent wrote to its events file meanwhile
        (the real handler reads the file once the agent has exited)."""
        now, choose = self.clock, self.chooser
        role, agent = effect.role, effect.agent
        started = InvocationStarted(role, agent, effect.model, Ordinal(effect.attempt), now())
        outcome = choose.pick(tuple(AgentOutcome), f"{role.value} outcome")
        if outcome is AgentOutcome.FATAL_FAILURE:
            failed = InvocationFailed(
                role, agent, ErrorKind.NOT_FOUND, "not installed", False, now()
            )
            return (started, failed)
        begun: tuple[PipelineEvent, ...] = (started, *usage(effect, choose, now))
        if outcome is AgentOutcome.RETRIABLE_FAILURE:
            # Each attempt fails its own way: the same message twice is a permanent failure.
            message = f"exit status 1 (attempt {effect.attempt})"
            failed = InvocationFailed(role, agent, ErrorKind.NON_ZERO_EXIT, message, True, now())
            return (*begun, failed, *self._intake(effect))
        if outcome is AgentOutcome.PROVIDER_LIMITED:
            return (*begun, limited(effect, choose, now), *self._intake(effect))
        if outcome is AgentOutcome.TIMEOUT:
            timed_out = InvocationTimedOut(
                role, agent, TimeoutKind.INACTIVITY, DurationMs(60_000), now()
            )
            return (*begun, timed_out, *self._intake(effect))
        succeeded = InvocationSucceeded(
            role, agent, ExitCode(0), DurationMs(1500), _digest(effect.effect_id), now()
        )
        if effect.response_schema is not None:
            # The role's report is collected only once its structured response is accepted.
            raw = choose.pick(SIMULATED_RESPONSES, "structured response")
            answered = judged(role, raw, effect.response_schema, now())
            return (*begun, succeeded, answered, *self._intake(effect))
        facts = (*begun, succeeded, *self._output(effect), *self._intake(effect))
        return ends_after_topics(effect, facts)

    def _intake(self, effect: InvokeAgent) -> tuple[PipelineEvent, ...]:
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
                published = TopicPublished(topic, payload, Ordinal(line), None, self.clock())
                events.append(published)
                offset += len(topic) + len(payload.text) + 30
            else:
                content = f"not json {index}"
                error = "invalid JSON: unexpected character"
                events.append(OutputLineMalformed(Ordinal(line), content, error, self.clock()))
                offset += len(content) + 1
        if count:
            events.append(EventsFileRead(Count(offset), Count(line), self.clock()))
        return tuple(events)

    def _topic(self, effect: InvokeAgent, index: int) -> tuple[str, Json]:
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

    def _output(self, effect: InvokeAgent | CollectReport) -> tuple[PipelineEvent, ...]:
        now, choose = self.clock, self.chooser
        role = effect.role
        if role is Role.PLANNER:
            if choose.pick((True, False), "plan usable"):
                plan = _digest(f"plan {effect.effect_id}")
                return (PlanProduced(Ordinal(effect.iteration + 1), plan, now()),)
            return (PlanRejected("the plan has no steps", now()),)
        if role is Role.DEVELOPER and effect.prompt_kind is PromptKind.REVIEW_FIX:
            status = choose.pick(tuple(IterationStatus), "fix status")
            return (FixAttemptCompleted(Ordinal(effect.review_pass), status, now()),)
        if role is Role.DEVELOPER:
            status = choose.pick(tuple(IterationStatus), "iteration status")
            return (
                DevelopmentIterationCompleted(
                    Ordinal(effect.iteration), status, f"iteration {effect.iteration}", now()
                ),
            )
        if role is Role.REVIEWER:
            issues = choose.number(0, 3, "review issues")
            if issues == 0:
                return (ReviewClean(Ordinal(effect.review_pass), now()),)
            return (ReviewIssuesFound(Ordinal(effect.review_pass), Count(issues), now()),)
        if role is Role.COMMITTER:
            return (
                CommitMessageGenerated(f"Iteration {effect.iteration}: simulated change", now()),
            )
        success = choose.pick((True, False), "dev-fix succeeds")
        return (DevFixCompleted(success, "diagnosed the failing agent", now()),)
