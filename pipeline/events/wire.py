"""The wire contract of events: category membership, stable tags and the schema version (pure).

A wire tag is ``"<category>.<event>"`` and never changes once released: renaming an event class
keeps its tag; removing an event retires its tag for good. Evolve a changed event with a new
``SCHEMA_VERSION`` and an upcaster instead.
"""

from __future__ import annotations

import types
import typing
from collections.abc import Mapping
from typing import Any, Final

from pipeline.events import (
    agent,
    commit,
    context,
    dev_fix,
    development,
    error,
    hooks,
    human,
    integration,
    lifecycle,
    limits,
    misc,
    planning,
    prompt,
    review,
    validation,
)

__all__ = ["CATEGORIES", "RETIRED_TAGS", "SCHEMA_VERSION", "WIRE_TAGS", "members"]

SCHEMA_VERSION: Final = 21
"""The version written with every stored event; readers upcast older versions to this one.

History: 2 added ``PlanProduced.iteration``. 3 made ``TopicPublished.payload`` any JSON value
and added its ``emitted_at``, added ``RunCompleted.reason`` and the ``EventsFileRead`` fact.
4 added ``RunStarted.loop`` (the loop policy: hats with their response schemas, completion
gate, detectors, formatting retries), the ``ResponseSubmitted`` fact and
``PromptKind.FORMAT_CORRECTION``. 5 added the ``UsageReported`` fact, ``CostSource``, and
the spend limits of ``Budget`` (``max_cost_usd``, ``max_tokens``,
``max_cost_without_progress_usd``, ``role_max_cost_usd``; absent in older events: no limit).
6 added the ``EventsFileTruncated``, ``GitMetadataRestored`` and ``RunAbandoned`` facts and
``TerminationReason.ABANDONED``, and questions to a person get a random id in
``HumanQuestionAsked`` (older logs answered ``line-N`` ids). 7 added the ``RunSalvaged``
fact. 8 put the verdict on a structured response into ``ResponseSubmitted`` (``status``,
``problems``: the handler judges, the reducer reads) and retired the never-emitted
``StructuredResponseReceived`` and ``StructuredResponseMalformed``. 9 added the user's
topology (``LoopPolicy.topology``: hats routed by topics; absent before: the built-in
pipeline), the ``HatActivated`` fact, ``PromptKind.HAT`` and
``TerminationReason.WORKFLOW_STALLED``. 10 added gates (``LoopPolicy.gates``: commands run by
ralph at final validation; absent before: none), the ``GateStarted`` and ``GateFinished``
facts and ``TerminationReason.GATE_FAILED``. 11 added the tamper screen and the postconditions
(``LoopPolicy.tamper`` and ``LoopPolicy.postconditions``; absent before: none) and the
``ScreenBaseRecorded`` and ``ChangesScreened`` facts. 12 added the sandbox's facts:
``SandboxChecked`` (with ``SandboxMode``) and ``ConnectionRefused``. 13 added provider
limits: the ``ProviderLimited``, ``LimitResetAwaited`` and ``UsageWindowReported`` facts and
``LoopPolicy.limits`` (absent before: the defaults). 14 added the hats' escalation ladders
(``LoopPolicy.ladders``; absent before: none). 15 added a person's guidance: the
``GuidanceGiven`` fact. 16 added ``RunForked`` (``ralph fork``). 17 added the fork's own
agent, model and prompt digest to ``RunForked`` (absent before: the source's). 18 added
the merge queue's facts (the ``integration`` category), recorded after ``RunCompleted``.
19 added the
workspace's memories and tasks (the ``context`` category: ``ContextNoted``, and
``LoopPolicy.context``), lifecycle hooks and notifications (the ``hook`` category:
``HookRan``, ``LoopPolicy.hooks``, ``TerminationReason.HOOK_BLOCKED`` and ``SUSPENDED``).
20 added four screen hit kinds: ``test_lost`` and ``collection_failed`` (the collection
check), ``runner_detected`` and ``name_rebound``; pinned gates: ``LoopPolicy.pin``
(``GatePin``; absent before: off) and ``GateFinished.pinned`` and ``.restored`` (absent
before: not pinned); and ``LoopPolicy.review_completion`` (a completion claim in the built-in
pipeline is reviewed before final validation; absent before: False, straight to validation);
and ``IntegrationGated.pinned`` and ``.restored`` (the merge queue's gates pinned to the
target's head; absent before: not pinned); only added, so no upcaster.
21 added ``LoopPolicy.file_only_turns`` (a commit message's or a correction's turn has no
topic acted on but memory and task notes; absent before: False, every topic acted on, as
those runs ran); only added, so no upcaster.
"""


def members(alias: Any) -> tuple[type, ...]:
    """The classes of a union alias (or the one class of a single-member category), in order."""
    if isinstance(alias, types.UnionType) or typing.get_origin(alias) is typing.Union:
        result: list[type] = []
        for arg in typing.get_args(alias):
            result.extend(members(arg))
        return tuple(result)
    if isinstance(alias, type):
        return (alias,)
    raise TypeError(f"not an event union or class: {alias!r}")


CATEGORIES: Final[Mapping[str, Any]] = types.MappingProxyType(
    {
        "lifecycle": lifecycle.LifecycleEvent,
        "planning": planning.PlanningEvent,
        "development": development.DevelopmentEvent,
        "review": review.ReviewEvent,
        "prompt": prompt.PromptInputEvent,
        "agent": agent.AgentEvent,
        "commit": commit.CommitEvent,
        "rebase": commit.RebaseEvent,
        "dev_fix": dev_fix.AwaitingDevFixEvent,
        "human": human.HumanEvent,
        "error": error.ErrorEvent,
        "validation": validation.ValidationEvent,
        "misc": misc.MiscEvent,
        "integration": integration.IntegrationEvent,
        "context": context.ContextEvent,
        "hook": hooks.HookEvent,
    }
)
"""Each category's name and union, in the order ``PipelineEvent`` lists them."""


# The contract itself: one literal line per event. A renamed class keeps its old tag; a removed
# event's tag is never given to another; the snapshot test pins this table.
WIRE_TAGS: Final[Mapping[type, str]] = types.MappingProxyType(
    {
        lifecycle.RunStarted: "lifecycle.run_started",
        lifecycle.RunInterrupted: "lifecycle.run_interrupted",
        lifecycle.RunAbandoned: "lifecycle.run_abandoned",
        lifecycle.RunResumed: "lifecycle.run_resumed",
        lifecycle.RunCompleted: "lifecycle.run_completed",
        lifecycle.RunSalvaged: "lifecycle.run_salvaged",
        lifecycle.RunForked: "lifecycle.run_forked",
        lifecycle.SandboxChecked: "lifecycle.sandbox_checked",
        planning.PlanningStarted: "planning.planning_started",
        planning.PlanProduced: "planning.plan_produced",
        planning.PlanRejected: "planning.plan_rejected",
        development.DevelopmentIterationStarted: "development.development_iteration_started",
        development.DevelopmentIterationCompleted: "development.development_iteration_completed",
        development.HatActivated: "development.hat_activated",
        review.ReviewPassStarted: "review.review_pass_started",
        review.ReviewIssuesFound: "review.review_issues_found",
        review.ReviewClean: "review.review_clean",
        review.FixAttemptStarted: "review.fix_attempt_started",
        review.FixAttemptCompleted: "review.fix_attempt_completed",
        prompt.PromptMaterialized: "prompt.prompt_materialized",
        prompt.PromptFileProtected: "prompt.prompt_file_protected",
        agent.InvocationStarted: "agent.invocation_started",
        agent.InvocationSucceeded: "agent.invocation_succeeded",
        agent.InvocationFailed: "agent.invocation_failed",
        agent.InvocationTimedOut: "agent.invocation_timed_out",
        agent.BackoffWaited: "agent.backoff_waited",
        agent.TopicPublished: "agent.topic_published",
        agent.OutputLineMalformed: "agent.output_line_malformed",
        agent.EventsFileRead: "agent.events_file_read",
        agent.EventsFileTruncated: "agent.events_file_truncated",
        agent.ResponseSubmitted: "agent.response_submitted",
        agent.UsageReported: "agent.usage_reported",
        agent.ConnectionRefused: "agent.connection_refused",
        limits.ProviderLimited: "agent.provider_limited",
        limits.LimitResetAwaited: "agent.limit_reset_awaited",
        limits.UsageWindowReported: "agent.usage_window_reported",
        commit.CommitMessageGenerated: "commit.commit_message_generated",
        commit.CommitCreated: "commit.commit_created",
        commit.CommitSkipped: "commit.commit_skipped",
        commit.GitMetadataRestored: "commit.git_metadata_restored",
        commit.RebaseStarted: "rebase.rebase_started",
        commit.RebaseSucceeded: "rebase.rebase_succeeded",
        commit.RebaseConflicted: "rebase.rebase_conflicted",
        commit.RebaseAborted: "rebase.rebase_aborted",
        dev_fix.DevFixTriggered: "dev_fix.dev_fix_triggered",
        dev_fix.DevFixCompleted: "dev_fix.dev_fix_completed",
        dev_fix.CompletionMarkerEmitted: "dev_fix.completion_marker_emitted",
        human.HumanQuestionAsked: "human.human_question_asked",
        human.HumanResponseReceived: "human.human_response_received",
        human.HumanTimedOut: "human.human_timed_out",
        human.HumanInterventionRequired: "human.human_intervention_required",
        human.GuidanceGiven: "human.guidance_given",
        error.AgentChainExhausted: "error.agent_chain_exhausted",
        error.WorkspaceIoError: "error.workspace_io_error",
        error.BudgetExceeded: "error.budget_exceeded",
        validation.FinalValidationPassed: "validation.final_validation_passed",
        validation.FinalValidationFailed: "validation.final_validation_failed",
        validation.GateStarted: "validation.gate_started",
        validation.GateFinished: "validation.gate_finished",
        validation.ScreenBaseRecorded: "validation.screen_base_recorded",
        validation.ChangesScreened: "validation.changes_screened",
        misc.CheckpointSaved: "misc.checkpoint_saved",
        misc.FinalizingStarted: "misc.finalizing_started",
        misc.PromptPermissionsRestored: "misc.prompt_permissions_restored",
        integration.IntegrationQueued: "integration.integration_queued",
        integration.IntegrationRebased: "integration.integration_rebased",
        integration.IntegrationConflicted: "integration.integration_conflicted",
        integration.IntegrationResolved: "integration.integration_resolved",
        integration.IntegrationGated: "integration.integration_gated",
        integration.TargetMoved: "integration.target_moved",
        integration.TargetAdvanced: "integration.target_advanced",
        integration.IntegrationFailed: "integration.integration_failed",
        context.ContextNoted: "context.context_noted",
        hooks.HookRan: "hook.hook_ran",
    }
)
"""The stable ``type`` discriminator of each event class on the wire."""

RETIRED_TAGS: Final = frozenset(
    {
        # Schema 8: no handler ever emitted these; the response verdict lives in
        # ResponseSubmitted, and continuation, context cleaning and loop recovery were never
        # built. Reserved for good: a stored row with one of them is refused by name.
        "agent.structured_response_received",
        "agent.structured_response_malformed",
        "development.continuation_needed",
        "misc.context_cleaned",
        "misc.loop_recovery_triggered",
    }
)
"""Wire tags of events removed from the vocabulary: never given to another event."""
