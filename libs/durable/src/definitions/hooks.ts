/**
 * Lifecycle hooks: what they deliver and how a consumer is declared. Events are read from the run
 * history (written by the statements that change a run, so they exist iff the change committed),
 * after commit, at least once; see worker/hook-dispatcher.ts.
 */
import { InvalidArgumentError } from '../errors/index.js';
import { MAX_ID_LENGTH } from '../config/limits.js';

/** The lifecycle events hooks receive. */
export type DurableEventType = 'run.succeeded' | 'run.failed' | 'run.cancelled' | 'step.retried' | 'lease.lost';

/** History kind (durable_run_events.kind) of each event type. */
export const EVENT_KINDS: Readonly<Record<DurableEventType, string>> = {
  'run.succeeded': 'completed',
  'run.failed': 'failed',
  'run.cancelled': 'cancelled',
  'step.retried': 'step_retried',
  'lease.lost': 'lease_lost',
};
export const DURABLE_EVENT_TYPES = Object.keys(EVENT_KINDS) as DurableEventType[];
const TYPE_OF_KIND = new Map(Object.entries(EVENT_KINDS).map(([t, k]) => [k, t as DurableEventType]));

/** One lifecycle event, as a hook receives it. */
export interface DurableLifecycleEvent {
  type: DurableEventType;
  /** The history row's id (increasing): the same on a redelivery, so a handler can skip what it has seen. */
  id: string;
  runId: string;
  /** Null when the run was deleted (retention) before delivery. */
  workflowName: string | null;
  at: Date;
  /**
   * What the history recorded: run.failed `{ error }` (or `{ reason: 'deadline' }`), step.retried
   * `{ seq, step, attempt, error }`, lease.lost `{ epoch, worker }`, run.cancelled `{ by?, compensated? }`.
   */
  detail: Record<string, unknown> | null;
}

export type DurableEventHandler = (event: DurableLifecycleEvent) => unknown;

/** Options of engine.onEvent() and @OnDurableEvent(). */
export interface OnEventOptions {
  /**
   * The consumer's durable name: its cursor in durable_hook_cursors. Keep it stable across deploys
   * (a new name starts from the newest event). @OnDurableEvent() defaults it to `Class.method`.
   */
  consumer: string;
}

/** A registered consumer. */
export interface HookConsumer {
  consumer: string;
  types: ReadonlySet<DurableEventType>;
  handler: DurableEventHandler;
}

/** Checks onEvent()'s arguments; the consumer it describes. */
export function hookConsumer(types: unknown, handler: unknown, opts: unknown): HookConsumer {
  const list = Array.isArray(types) ? types : [types];
  const bad = list.filter((t) => !DURABLE_EVENT_TYPES.includes(t as DurableEventType));
  if (!list.length || bad.length) {
    throw new InvalidArgumentError(
      `onEvent: unknown event type ${bad.map((b) => JSON.stringify(b)).join(', ') || '(none given)'}; use ${DURABLE_EVENT_TYPES.join(', ')}.`,
      'types',
    );
  }
  if (typeof handler !== 'function')
    throw new InvalidArgumentError('onEvent: the handler must be a function (event) => unknown.', 'handler');
  const consumer = (opts as OnEventOptions | undefined)?.consumer;
  if (typeof consumer !== 'string' || !consumer || consumer.length > MAX_ID_LENGTH) {
    throw new InvalidArgumentError(
      `onEvent: { consumer } must be a non-empty string of at most ${MAX_ID_LENGTH} characters: the durable name of the ` +
        `handler's position in the history (got ${JSON.stringify(consumer)}).`,
      'consumer',
    );
  }
  return { consumer, types: new Set(list as DurableEventType[]), handler: handler as DurableEventHandler };
}

/** The event a history row is, or null for kinds no hook receives. */
export function eventTypeOf(kind: string): DurableEventType | null {
  return TYPE_OF_KIND.get(kind) ?? null;
}
