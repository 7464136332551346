/** The admin API's rows and limits, shared by both dialects' admin statements (see admin-*.ts, live.ts, flow-limits.ts), and the mapping of the rows both read alike. */
import { liveProgress } from './live-progress.js';
import { iso } from './store.js';
import type { RunStatus } from './rows.js';

/** Validated filter of the runs list (null = no filter). */
export interface RunFilter {
  statuses: RunStatus[] | null;
  workflows: string[] | null;
  queues: string[] | null;
  createdFrom: Date | null;
  createdTo: Date | null;
  finishedFrom: Date | null;
  finishedTo: Date | null;
  idPrefix: string | null;
  parentId: string | null;
  /** Runs carrying every one of these tags. */
  tags: string[] | null;
  /** Runs whose input contains this JSON (Postgres `@>`: the given keys with these values, arrays as subsets). */
  input: unknown;
  /** Exactly these runs (a selection in the dashboard). */
  ids: string[] | null;
}

export interface RunListItem {
  id: string;
  workflowName: string;
  queue: string;
  status: RunStatus;
  priority: number;
  attempt: number;
  parentId: string | null;
  appVersion: string | null;
  leaseOwner: string | null;
  errorMessage: string | null;
  /** The output's JSON text, cut at 160 characters (or its size when it is over 2 kB); null without output. */
  outputSummary: string | null;
  stepCount: number;
  createdAt: string;
  startedAt: string | null;
  finishedAt: string | null;
  updatedAt: string;
  availableAt: string;
  deadlineAt: string | null;
  /** Set when cancel(id, { compensate: true }) was asked and the run has not ended yet (or ended after it). */
  cancelRequestedAt: string | null;
  tags: string[];
  /** A WAITING run: the waits of its latest suspension (sleep, recv, child), else null. */
  waits: Array<{ seq: number; kind: 'sleep' | 'recv' | 'child' | 'group'; key: string | null }> | null;
}

export type SortKey = 'created' | 'updated';

export type SortOrder = 'asc' | 'desc';

export interface StatusCounts {
  counts: Record<RunStatus, number>;
  /** True when the exact counts ran past the budget and `counts` are the planner's estimates. */
  estimated: boolean;
}

/** Nested values (step outputs, messages, events) larger than this come back as a preview. */
export const CLIP_BYTES = 64 * 1024;

/** Most rows of each kind returned with one run. */
export const DETAIL_LIMITS = { steps: 2000, messages: 500, events: 500, history: 1000, children: 500 } as const;

export interface RunDetailRow {
  run: Record<string, unknown>;
  steps: Array<Record<string, unknown>>;
  messages: Array<Record<string, unknown>>;
  events: Array<Record<string, unknown>>;
  history: Array<Record<string, unknown>>;
  children: Array<Record<string, unknown>>;
  totals: { steps: number; messages: number; events: number; history: number; children: number };
  dbNow: string;
}

/** The ranges a chart covers, and the bucket width of each (60 buckets per chart at most: 1 min, 30 min, 3 h). */
export const CHART_RANGES = {
  '1h': { ms: 3_600_000, bucketMs: 60_000 },
  '24h': { ms: 86_400_000, bucketMs: 1_800_000 },
  '7d': { ms: 604_800_000, bucketMs: 10_800_000 },
} as const;

export type ChartRange = keyof typeof CHART_RANGES;

export interface ChartBucket {
  at: string;
  started: number;
  succeeded: number;
  failed: number;
  cancelled: number;
}

export interface StatsRows {
  dbNow: string;
  active: Array<{ workflow: string; queue: string; status: RunStatus; n: number; oldestDue: string | null; expired: number }>;
  finished: Array<{ workflow: string; queue: string; status: RunStatus; n: number }>;
  perMinute: Array<{
    workflow: string;
    queue: string;
    minute: string;
    started: number;
    succeeded: number;
    failed: number;
    cancelled: number;
  }>;
  currentMinute: string;
}

export interface VersionInFlightRow {
  appVersion: string | null;
  workflow: string;
  status: RunStatus;
  n: number;
  oldest: string;
}

/** Most changed runs one tick names; beyond it the tick says `many` (a client reloads what it shows). */
export const LIVE_CHANGED_LIMIT = 100;

export interface LiveTick {
  /** The database clock at the tick. */
  now: Date;
  /** The tick's snapshot xmin (full transaction id, as text): the next tick's horizon. */
  horizon: string;
  /** The start of the oldest transaction open in this database (the tick's own at the latest). */
  oldest: Date;
  changed: Array<{ id: string; status: string; xid: string }>;
  watched: Array<{ id: string; v: string }>;
}

/** A rate limit as stored: at most `limit` starts in any `periodMs`. */
export interface RateLimitView {
  limit: number;
  periodMs: number;
}

/** The limits of one queue as the statements take them (null = no such limit). */
export interface LimitValues {
  globalConcurrency: number | null;
  keyConcurrency: number | null;
  rateLimit: RateLimitView | null;
  keyRateLimit: RateLimitView | null;
}

/** What SELECT_RUN_BLOCKERS reads about one run. */
export interface RunBlockersRow extends LimitValues {
  status: string;
  queue: string;
  concurrencyKey: string | null;
  availableAt: Date | null;
  dbNow: Date;
  due: boolean;
  queueRunning: number;
  keyRunning: number;
  /** When the queue's / the key's rate window next has room (null: it has room, or no such limit). */
  rateFreeAt: Date | null;
  keyRateFreeAt: Date | null;
  /** Debounce: its key while it has not started (null otherwise), and the latest time it may be pushed to. */
  debounceKey: string | null;
  debounceUntil: Date | null;
}

/** How a dialect's driver hands back a JSON column: PostgreSQL's parsed, MySQL-family text to parse. */
export type JsonReader = (v: unknown) => unknown;

/** A runs-list row (LIST_COLUMNS of either dialect) as the API shows it. */
export function runListItem(r: Record<string, unknown>, json: JsonReader): RunListItem {
  return {
    id: r.id as string,
    workflowName: r.workflow_name as string,
    queue: r.queue as string,
    status: r.status as RunStatus,
    priority: Number(r.priority),
    attempt: Number(r.attempt),
    parentId: (r.parent_id as string | null) ?? null,
    appVersion: (r.app_version as string | null) ?? null,
    leaseOwner: (r.lease_owner as string | null) ?? null,
    errorMessage: (r.error_message as string | null) ?? null,
    outputSummary: (r.output_summary as string | null) ?? null,
    waits: (json(r.waits) as RunListItem['waits']) ?? null,
    stepCount: Number(r.step_count),
    createdAt: iso(r.created_at)!,
    startedAt: iso(r.started_at),
    finishedAt: iso(r.finished_at),
    updatedAt: iso(r.updated_at)!,
    availableAt: iso(r.available_at)!,
    deadlineAt: iso(r.deadline_at),
    cancelRequestedAt: iso(r.cancel_requested_at),
    tags: (json(r.tags) as string[] | null) ?? [],
  };
}

/** The run of a run detail (its durable_runs row), with the live progress of its steps not recorded yet. */
export function detailRun(r: Record<string, unknown>, steps: Array<Record<string, unknown>>, json: JsonReader): Record<string, unknown> {
  const traceparent = (r.traceparent as string | null) ?? null;
  return {
    id: r.id,
    workflowName: r.workflow_name,
    queue: r.queue,
    status: r.status,
    input: json(r.input) ?? null,
    output: json(r.output) ?? null,
    error: json(r.error) ?? null,
    priority: Number(r.priority),
    attempt: Number(r.attempt),
    leaseOwner: r.lease_owner ?? null,
    leaseExpiresAt: iso(r.lease_expires_at),
    leaseEpoch: Number(r.lease_epoch),
    parentId: r.parent_id ?? null,
    appVersion: r.app_version ?? null,
    deadlineAt: iso(r.deadline_at),
    availableAt: iso(r.available_at),
    createdAt: iso(r.created_at),
    startedAt: iso(r.started_at),
    finishedAt: iso(r.finished_at),
    updatedAt: iso(r.updated_at),
    cancelRequestedAt: iso(r.cancel_requested_at),
    concurrencyKey: r.concurrency_key ?? null,
    tags: (json(r.tags) as string[] | null) ?? [],
    progress: r.status === 'RUNNING' ? liveProgress(r.progress, steps) : null,
    traceparent,
    traceId: traceparent?.split('-')[1] || null,
    context: json(r.context) ?? null,
  };
}

/** How many rows of each kind a run has (the detail shows the newest DETAIL_LIMITS of them). */
export const detailTotals = (r: Record<string, unknown>): RunDetailRow['totals'] => ({
  steps: Number(r.steps_total),
  messages: Number(r.messages_total),
  events: Number(r.events_total),
  history: Number(r.history_total),
  children: Number(r.children_total),
});

/** A run's status after an action (cancel, resume), as the API answers it. */
export function runSummaryOf(
  r: Record<string, unknown> | undefined,
): { id: string; workflowName: string; status: RunStatus; updatedAt: string; cancelRequestedAt: string | null } | null {
  return r
    ? {
        id: r.id as string,
        workflowName: r.workflow_name as string,
        status: r.status as RunStatus,
        updatedAt: iso(r.updated_at)!,
        cancelRequestedAt: iso(r.cancel_requested_at),
      }
    : null;
}

/** The statistics' rows of unfinished and of recently finished runs, per workflow, queue and status. */
export const activeStatsRow = (r: Record<string, unknown>): StatsRows['active'][number] => ({
  workflow: r.workflow_name as string,
  queue: r.queue as string,
  status: r.status as RunStatus,
  n: Number(r.n),
  oldestDue: iso(r.oldest_due),
  expired: Number(r.expired),
});
export const finishedStatsRow = (r: Record<string, unknown>): StatsRows['finished'][number] => ({
  workflow: r.workflow_name as string,
  queue: r.queue as string,
  status: r.status as RunStatus,
  n: Number(r.n),
});
export const perMinuteStatsRow = (r: Record<string, unknown>): StatsRows['perMinute'][number] => ({
  workflow: r.workflow_name as string,
  queue: r.queue as string,
  minute: iso(r.minute)!,
  started: Number(r.started),
  succeeded: Number(r.succeeded),
  failed: Number(r.failed),
  cancelled: Number(r.cancelled),
});

/** The versions view's row: an app version's unfinished runs of one workflow and status. */
export const versionInFlightRow = (r: Record<string, unknown>): VersionInFlightRow => ({
  appVersion: (r.app_version as string | null) ?? null,
  workflow: r.workflow_name as string,
  status: r.status as RunStatus,
  n: Number(r.n),
  oldest: iso(r.oldest)!,
});

// --- queue limits (flow-limits.ts and its MySQL twin) -------------------------------------------

/** A queue's cluster-wide limits as stored: declared in the options (synced at boot) or set at runtime. */
export interface QueueLimitsView {
  queue: string;
  globalConcurrency: number | null;
  keyConcurrency: number | null;
  rateLimit: RateLimitView | null;
  keyRateLimit: RateLimitView | null;
  source: 'declared' | 'runtime';
  updatedAt: string | null;
}

/** A queue's limits with its runs executing now, its due runs waiting to be claimed, and its rate window. */
export interface QueueLimitsUsage extends QueueLimitsView {
  running: number;
  due: number;
  /** Starts in the queue's rate window now (0 without a rate limit). */
  rateUsed: number;
  /** When the rate window next has room; null: it has room now (or there is no rate limit). */
  rateLimitedUntil: string | null;
}

/** Runs of one concurrency key: executing now, due but waiting, and its rate window (with a keyRateLimit). */
export interface KeyUsage {
  key: string;
  running: number;
  due: number;
  rateUsed: number;
  rateLimitedUntil: string | null;
}

const rate = (limit: unknown, period: unknown): RateLimitView | null =>
  limit == null || period == null ? null : { limit: Number(limit), periodMs: Number(period) };

/** A limits row (either dialect) as the API shows it. */
export const toLimits = (r: Record<string, unknown>): QueueLimitsView => ({
  queue: r.queue as string,
  globalConcurrency: r.global_concurrency == null ? null : Number(r.global_concurrency),
  keyConcurrency: r.key_concurrency == null ? null : Number(r.key_concurrency),
  rateLimit: rate(r.rate_limit, r.rate_period_ms),
  keyRateLimit: rate(r.key_rate_limit, r.key_rate_period_ms),
  source: r.source as 'declared' | 'runtime',
  updatedAt: iso(r.updated_at),
});

/** The limit values in LIMIT_COLUMNS order (both dialects' statements take them so). */
export const limitValues = (l: LimitValues) => [
  l.globalConcurrency,
  l.keyConcurrency,
  l.rateLimit?.limit ?? null,
  l.rateLimit?.periodMs ?? null,
  l.keyRateLimit?.limit ?? null,
  l.keyRateLimit?.periodMs ?? null,
];
