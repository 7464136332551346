// nestjs-durable/engine: the durable-execution engine without Nest. Register workflows on a
// WorkflowRegistry, create a DurableEngine with a connection (and a Prisma client for
// transactional steps), start() it; inside workflows use Durable (Durable.step for steps).
export { DurableEngine, type DurableEngineConfig } from './engine/durable-engine.js';
export { WorkflowHandle, type HandleBackend } from './engine/handle.js';
export type { LocalRunEnd } from './engine/local-results.js';
export type { StartOptions, StartOutcome, DebounceOptions } from './engine/new-run.js';
export type { StartManyItem } from './engine/start-runs.js';
export type { SendOptions } from './engine/queries.js';
export type { CancelOptions, ControlOptions, ForkResult } from './engine/run-control.js';
export type { BulkAction, BulkBatchResult, BulkCount, BulkFilter, BulkOptions, BulkPosition, BulkResult } from './engine/bulk.js';
export type { RunFilter } from './store/admin-list.js';
export type { RunView } from './engine/run-view.js';
export { RUN_EXPORT_FORMAT, type RunExport } from './engine/run-export.js';
export { WorkflowRegistry } from './definitions/registry.js';
export {
  verifyRuns,
  verifyReportText,
  type VerifyOptions,
  type VerifyProgress,
  type VerifyReport,
  type VerifyFailure,
  type WorkflowVerifyReport,
} from './engine/verify.js';
export { isVerifyMode, VERIFY_MODE_ENV } from './config/limits.js';
export {
  replayAgainstRecording,
  replayRun,
  type RecordedRun,
  type ReplayResult,
  type ReplayMismatch,
  type ReplayOptions,
} from './workflow/replay.js';
export type { RecordedStep, StepCompensation } from './store/rows.js';
export { ScheduleClient } from './engine/schedule-client.js';
export {
  FlowControlClient,
  type QueueLimits,
  type QueueLimitsView,
  type QueueLimitsUsage,
  type RateLimitView,
  type DebouncedRun,
  type SingletonRun,
  type KeyUsage,
  type StartBlockers,
} from './engine/flow-control.js';
export type {
  ScheduleDefinition,
  ScheduleChanges,
  ScheduleView,
  ScheduleRun,
  TriggerResult,
  ListSchedulesOptions,
} from './engine/schedule-types.js';
export {
  scheduleRunId,
  type CatchUpPolicy,
  type OverlapPolicy,
  type SchedulePolicy,
  type ScheduleSpec,
  type WorkflowScheduleOptions,
  type ScheduledInput,
} from './definitions/schedule.js';
export type {
  WorkflowOptions,
  StepOptions,
  CompensationFn,
  InlineCompensation,
  StepTransactionOptions,
  WorkflowDefinition,
  StepDefinition,
} from './definitions/definitions.js';
export { Durable, type InlineStepOptions } from './workflow/durable-api.js';
export type { DurableStreamWriter } from './workflow/streams.js';
export type { DurableCallback } from './workflow/signals.js';
export { defineSignal, type SignalDefinition, type SignalPayload } from './definitions/signals.js';
export type { CallbackDelivery } from './engine/signals.js';
export type { CallbackOptions, ResolvedCallbackOptions } from './config/callback-options.js';
export type { StreamChunk, ReadStreamOptions } from './engine/stream-reader.js';
export type { StreamSummary } from './store/streams.js';
export { ChildWorkflowHandle, type ChildOptions } from './workflow/children.js';
export {
  ChildGroup,
  type ChildGroupInputs,
  type ChildGroupOptions,
  type ChildGroupProgress,
  type ChildOutcome,
} from './workflow/child-groups.js';
export type { ChildGroupCompletions } from './workflow/group-completions.js';
export type { TransactionalPrisma } from './workflow/execution-services.js';
export { EngineClock, type StepAttemptHooks } from './config/clock.js';
export type { EngineOptions, ResolvedEngineOptions, QueueOptions, RateLimit, DurableLogger } from './config/options.js';
export type { RetryPolicy } from './config/retry-policy.js';
export type { RunStatus } from './store/rows.js';
export type { RunEvent } from './store/history.js';
export type { HookCursorRow } from './store/hook-cursors.js';
export {
  DURABLE_EVENT_TYPES,
  type DurableEventType,
  type DurableLifecycleEvent,
  type DurableEventHandler,
  type OnEventOptions,
} from './definitions/hooks.js';
export type { TelemetryOptions, HooksOptions, DurableLogLevel } from './config/observability-options.js';
export type { DurableContextOptions } from './config/context-options.js';
export type { PrismaLike, SqlClient } from './store/sql-client.js';
export type { Dialect } from './store/dialect.js';
export type { Layout, Store } from './store/store.js';
export type { Statement } from './store/statement.js';
export { engineStatements } from './store/statement.js';
export { createPostgresPool, postgresPoolConfig, type PostgresPoolOptions } from './store/pool.js';
export { encode as encodeValue, decode as decodeValue, type EncodeOptions } from './codec/codec.js';
export * from './errors/index.js';
export type { BackfillSpec, BackfillInput, BackfillResult, BackfillProgress } from './workflow/backfill.js';
export type { BackfillView } from './engine/backfills.js';
