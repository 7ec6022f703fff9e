"""The frozen event vocabulary of ralph-pipeline (pure data).

``PipelineEvent`` is the closed union of the category unions. Events are facts about what happened
("the invocation failed, retriable"), never commands. Each event carries the time a handler read
(``at``) and any ids; reducers never read a clock or make an id.

The unions are frozen: ``tests/events/test_frozen_vocabulary.py`` compares them, their fields and
their wire tags with snapshots. To extend a category on purpose, see
``docs/architecture/extending-events.md``.
"""

from __future__ import annotations

from typing import TypeAlias

from pipeline.events.agent import (
    MALFORMED_TOPIC,
    AgentEvent,
    BackoffWaited,
    ConnectionRefused,
    EventsFileRead,
    EventsFileTruncated,
    InvocationFailed,
    InvocationStarted,
    InvocationSucceeded,
    InvocationTimedOut,
    OutputLineMalformed,
    ResponseSubmitted,
    TopicPublished,
    UsageReported,
)
from pipeline.events.commit import (
    CommitCreated,
    CommitEvent,
    CommitMessageGenerated,
    CommitSkipped,
    GitMetadataRestored,
    RebaseAborted,
    RebaseConflicted,
    RebaseEvent,
    RebaseStarted,
    RebaseSucceeded,
)
from pipeline.events.context import ContextEvent, ContextNoted
from pipeline.events.dev_fix import (
    AwaitingDevFixEvent,
    CompletionMarkerEmitted,
    DevFixCompleted,
    DevFixTriggered,
)
from pipeline.events.development import (
    DevelopmentEvent,
    DevelopmentIterationCompleted,
    DevelopmentIterationStarted,
    HatActivated,
)
from pipeline.events.error import (
    AgentChainExhausted,
    BudgetExceeded,
    BudgetKind,
    ErrorEvent,
    WorkspaceIoError,
)
from pipeline.events.escalation import DEFAULT_BOUNCES, Ladder, is_model_name
from pipeline.events.hook_policy import BLOCKABLE, SUSPENDABLE, HookAction, HookPoint, HookSpec
from pipeline.events.hooks import HookEvent, HookRan
from pipeline.events.human import (
    GuidanceGiven,
    HumanEvent,
    HumanInterventionRequired,
    HumanQuestionAsked,
    HumanResponseReceived,
    HumanTimedOut,
)
from pipeline.events.integration import (
    IntegrationConflicted,
    IntegrationEvent,
    IntegrationFailed,
    IntegrationGated,
    IntegrationQueued,
    IntegrationRebased,
    IntegrationResolved,
    TargetAdvanced,
    TargetMoved,
)
from pipeline.events.lifecycle import (
    LifecycleEvent,
    RunAbandoned,
    RunCompleted,
    RunForked,
    RunInterrupted,
    RunResumed,
    RunSalvaged,
    RunStarted,
    SandboxChecked,
)
from pipeline.events.limit_policy import DEFAULT_MAX_LIMIT_WAIT_S, LimitPolicy, OnUsageLimit
from pipeline.events.limits import (
    LimitResetAwaited,
    LimitScope,
    ProviderLimited,
    UsageWindowReported,
)
from pipeline.events.misc import (
    CheckpointSaved,
    FinalizingStarted,
    MiscEvent,
    PromptPermissionsRestored,
)
from pipeline.events.notes import CONTEXT_TOPICS, ContextNote, ContextPolicy, NoteKind
from pipeline.events.planning import PlanningEvent, PlanningStarted, PlanProduced, PlanRejected
from pipeline.events.policy import (
    CONNECTION_REFUSED_TOPIC,
    CONTEXT_REFUSED_TOPIC,
    GIT_RESTORED_TOPIC,
    HUMAN_GUIDANCE_TOPIC,
    HUMAN_INTERACT_TOPIC,
    HUMAN_RESPONSE_TOPIC,
    HUMAN_TIMEOUT_TOPIC,
    MAX_FORMATTING_RETRIES,
    STARTING_EVENT,
    TASK_ABANDONED_TOPIC,
    TASK_BLOCKED_TOPIC,
    TASK_COMPLETE_TOPIC,
    TASK_RESUME_TOPIC,
    TOPIC_NOT_ASKED_TOPIC,
    GateSpec,
    Hat,
    LoopPolicy,
    PatternError,
    Topology,
    WorkHat,
    check_pattern,
    in_scope,
    specificity,
    topic_matches,
)
from pipeline.events.prompt import PromptFileProtected, PromptInputEvent, PromptMaterialized
from pipeline.events.review import (
    FixAttemptCompleted,
    FixAttemptStarted,
    ReviewClean,
    ReviewEvent,
    ReviewIssuesFound,
    ReviewPassStarted,
)
from pipeline.events.sandbox import SandboxMode
from pipeline.events.screen import (
    POSTCONDITION_KINDS,
    PostconditionPolicy,
    ScreenHit,
    ScreenKind,
    ScreenScope,
    TamperPolicy,
)
from pipeline.events.validation import (
    ChangesScreened,
    FinalValidationFailed,
    FinalValidationPassed,
    GateFinished,
    GateStarted,
    ScreenBaseRecorded,
    ValidationEvent,
)
from pipeline.events.values import (
    AgentName,
    Budget,
    CheckpointTrigger,
    CostSource,
    Count,
    Digest,
    DurationMs,
    ErrorKind,
    ExitCode,
    GateAction,
    GateBoundary,
    GatePin,
    GateStatus,
    Instant,
    IterationStatus,
    Json,
    JsonValue,
    LogPosition,
    Ordinal,
    PromptKind,
    QuestionId,
    ResponseStatus,
    Role,
    RoleChain,
    RunId,
    TerminationReason,
    TimeoutKind,
    Usd,
    WorkspaceErrorKind,
)
from pipeline.events.wire import CATEGORIES, RETIRED_TAGS, SCHEMA_VERSION, WIRE_TAGS, members

PipelineEvent: TypeAlias = (
    LifecycleEvent
    | PlanningEvent
    | DevelopmentEvent
    | ReviewEvent
    | PromptInputEvent
    | AgentEvent
    | CommitEvent
    | RebaseEvent
    | AwaitingDevFixEvent
    | HumanEvent
    | ErrorEvent
    | ValidationEvent
    | MiscEvent
    | IntegrationEvent
    | ContextEvent
    | HookEvent
)
"""Every fact the pipeline can record: the closed union of the category unions."""

__all__ = [
    "BLOCKABLE",
    "CATEGORIES",
    "CONNECTION_REFUSED_TOPIC",
    "CONTEXT_REFUSED_TOPIC",
    "CONTEXT_TOPICS",
    "DEFAULT_BOUNCES",
    "DEFAULT_MAX_LIMIT_WAIT_S",
    "GIT_RESTORED_TOPIC",
    "HUMAN_GUIDANCE_TOPIC",
    "HUMAN_INTERACT_TOPIC",
    "HUMAN_RESPONSE_TOPIC",
    "HUMAN_TIMEOUT_TOPIC",
    "MALFORMED_TOPIC",
    "MAX_FORMATTING_RETRIES",
    "POSTCONDITION_KINDS",
    "RETIRED_TAGS",
    "SCHEMA_VERSION",
    "STARTING_EVENT",
    "SUSPENDABLE",
    "TASK_ABANDONED_TOPIC",
    "TASK_BLOCKED_TOPIC",
    "TASK_COMPLETE_TOPIC",
    "TASK_RESUME_TOPIC",
    "TOPIC_NOT_ASKED_TOPIC",
    "WIRE_TAGS",
    "AgentChainExhausted",
    "AgentEvent",
    "AgentName",
    "AwaitingDevFixEvent",
    "BackoffWaited",
    "Budget",
    "BudgetExceeded",
    "BudgetKind",
    "ChangesScreened",
    "CheckpointSaved",
    "CheckpointTrigger",
    "CommitCreated",
    "CommitEvent",
    "CommitMessageGenerated",
    "CommitSkipped",
    "CompletionMarkerEmitted",
    "ConnectionRefused",
    "ContextEvent",
    "ContextNote",
    "ContextNoted",
    "ContextPolicy",
    "CostSource",
    "Count",
    "DevFixCompleted",
    "DevFixTriggered",
    "DevelopmentEvent",
    "DevelopmentIterationCompleted",
    "DevelopmentIterationStarted",
    "Digest",
    "DurationMs",
    "ErrorEvent",
    "ErrorKind",
    "EventsFileRead",
    "EventsFileTruncated",
    "ExitCode",
    "FinalValidationFailed",
    "FinalValidationPassed",
    "FinalizingStarted",
    "FixAttemptCompleted",
    "FixAttemptStarted",
    "GateAction",
    "GateBoundary",
    "GateFinished",
    "GatePin",
    "GateSpec",
    "GateStarted",
    "GateStatus",
    "GitMetadataRestored",
    "GuidanceGiven",
    "Hat",
    "HatActivated",
    "HookAction",
    "HookEvent",
    "HookPoint",
    "HookRan",
    "HookSpec",
    "HumanEvent",
    "HumanInterventionRequired",
    "HumanQuestionAsked",
    "HumanResponseReceived",
    "HumanTimedOut",
    "Instant",
    "IntegrationConflicted",
    "IntegrationEvent",
    "IntegrationFailed",
    "IntegrationGated",
    "IntegrationQueued",
    "IntegrationRebased",
    "IntegrationResolved",
    "InvocationFailed",
    "InvocationStarted",
    "InvocationSucceeded",
    "InvocationTimedOut",
    "IterationStatus",
    "Json",
    "JsonValue",
    "Ladder",
    "LifecycleEvent",
    "LimitPolicy",
    "LimitResetAwaited",
    "LimitScope",
    "LogPosition",
    "LoopPolicy",
    "MiscEvent",
    "NoteKind",
    "OnUsageLimit",
    "Ordinal",
    "OutputLineMalformed",
    "PatternError",
    "PipelineEvent",
    "PlanProduced",
    "PlanRejected",
    "PlanningEvent",
    "PlanningStarted",
    "PostconditionPolicy",
    "PromptFileProtected",
    "PromptInputEvent",
    "PromptKind",
    "PromptMaterialized",
    "PromptPermissionsRestored",
    "ProviderLimited",
    "QuestionId",
    "RebaseAborted",
    "RebaseConflicted",
    "RebaseEvent",
    "RebaseStarted",
    "RebaseSucceeded",
    "ResponseStatus",
    "ResponseSubmitted",
    "ReviewClean",
    "ReviewEvent",
    "ReviewIssuesFound",
    "ReviewPassStarted",
    "Role",
    "RoleChain",
    "RunAbandoned",
    "RunCompleted",
    "RunForked",
    "RunId",
    "RunInterrupted",
    "RunResumed",
    "RunSalvaged",
    "RunStarted",
    "SandboxChecked",
    "SandboxMode",
    "ScreenBaseRecorded",
    "ScreenHit",
    "ScreenKind",
    "ScreenScope",
    "TamperPolicy",
    "TargetAdvanced",
    "TargetMoved",
    "TerminationReason",
    "TimeoutKind",
    "TopicPublished",
    "Topology",
    "UsageReported",
    "UsageWindowReported",
    "Usd",
    "ValidationEvent",
    "WorkHat",
    "WorkspaceErrorKind",
    "WorkspaceIoError",
    "check_pattern",
    "in_scope",
    "is_model_name",
    "members",
    "specificity",
    "topic_matches",
]
