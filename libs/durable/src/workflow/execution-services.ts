import type { EndResult } from '../store/checkpoints.js';
import type { NewRun, RunEnd, StepCheckpoint } from '../store/rows.js';
import type { PrismaLike } from '../store/sql-client.js';
import type { Store } from '../store/store.js';
import type { EngineClock, StepAttemptHooks } from '../config/clock.js';
import type { Telemetry } from '../telemetry/telemetry.js';
import type { ResolvedEngineOptions } from '../config/options.js';
import type { StepTransactionOptions } from '../definitions/definitions.js';

/** A Prisma client able to open interactive transactions (transactional steps). */
export interface TransactionalPrisma extends PrismaLike {
  $transaction<R>(fn: (tx: PrismaLike) => Promise<R>, options?: StepTransactionOptions): Promise<R>;
}

/** The fenced writes executions make, grouped across executions: a step resolves to false when the lease was lost. */
export interface ExecutionWrites {
  step(s: StepCheckpoint): Promise<boolean>;
  end(e: RunEnd): Promise<EndResult>;
}

/** What an execution needs from the engine around it. */
export interface ExecutionServices {
  store: Store;
  prisma: TransactionalPrisma | null;
  options: ResolvedEngineOptions;
  /** The engine's clock (Date.now() outside virtual-time tests). */
  clock: EngineClock;
  /** Fault injection of the testing kit; empty in production. */
  stepHooks: StepAttemptHooks;
  /** Step checkpoints and run ends, fenced, with group commit across concurrent executions. */
  writes: ExecutionWrites;
  /** Spans of executions and steps, and the engine's metrics (no-ops without OpenTelemetry). */
  telemetry: Telemetry;
  /** The store on a connection kept for lease renewal (the LISTEN session) while it is up; the heartbeat falls back to `store`. */
  leaseStore?: () => Store | null;
  /** Tells this process's readers of the run's streams that a chunk was stored (other processes hear it through the database). */
  streamWritten?: (runId: string) => void;
  /** A run that is not kept succeeded and its end (which deletes it) is being written: its output (codec JSON), for the handles of this process. */
  runDeleted?: (runId: string, output: string) => void;
  /** A run's end was written by this process (status, output and error as stored): its handles here take it as it is. */
  runEnded?: (runId: string, end: { status: 'SUCCEEDED' | 'FAILED' | 'CANCELLED'; output: string | null; error: string | null }) => void;
  /**
   * Builds a validated run to insert (child workflows): the engine's checks and defaults for
   * workflow name, queue, priority, timeout and input encoding.
   */
  newRun: (
    workflowName: string,
    input: unknown,
    opts: { id: string; queue?: string; priority?: number; timeoutMs?: number | null; delayMs?: number },
  ) => NewRun;
}

export function isTransactionalPrisma(x: unknown): x is TransactionalPrisma {
  return typeof (x as TransactionalPrisma | null)?.$transaction === 'function' && typeof (x as PrismaLike).$queryRawUnsafe === 'function';
}
