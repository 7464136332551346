/**
 * The figures every peer (ours, DBOS) fills in for one benchmark run, and the
 * options every peer runner receives. Keep this file dependency-free: both
 * sides import it.
 */

export interface Percentiles {
  p50: number;
  p90: number;
  p99: number;
}

export interface PeerFigures {
  /** Peer name as shown in the table, e.g. "DBOS 5.3.0" or "nestjs-durable". */
  name: string;
  /**
   * Saturation throughput: N workflows enqueued while no worker runs, then
   * drained; N / (first start -> last completion), database clock.
   */
  workflowsPerSec: number;
  /** workflowsPerSec * steps per workflow. */
  stepsPerSec: number;
  /**
   * End to end: `callers` concurrent one-by-one enqueuers while the workers run (for ours with one
   * process: in the worker's process); N / (first enqueue -> last completion), database clock.
   * Bounded by the enqueue rate when enqueuing is slower than executing.
   */
  endToEndWorkflowsPerSec?: number;
  /** The same, the callers in another process than the workers (ours only). */
  endToEndRemoteWorkflowsPerSec?: number;
  /** N sequential awaited single enqueues (no worker running) / their wall time. */
  enqueueOneByOnePerSec: number;
  /** Bulk enqueue (startMany) rate, for peers that have one. */
  enqueueBulkPerSec?: number;
  /** Milliseconds, from the peer's own database timestamps, over the end-to-end run. */
  latency: {
    enqueueToStart: Percentiles;
    enqueueToDone: Percentiles;
  };
  /** Milliseconds: 50 sequential runs on an otherwise idle system. */
  idle: {
    enqueueToStart: { p50: number; p99: number };
  };
  /** CPU milliseconds per workflow over the end-to-end run (enqueue + execution). */
  cpuMsPerWorkflow: { node: number; postgres: number; total: number };
  /** pg_stat_database xact_commit delta / N, over the end-to-end run. */
  commitsPerWorkflow: number;
  /** pg_stat_database (tup_inserted + tup_updated + tup_deleted) delta / N, over the end-to-end run. */
  rowsWrittenPerWorkflow: number;
  /** Anything a reader needs to interpret the figures (config used, caveats). */
  notes: string[];
}

/** Each peer's own pool (ours per worker process, DBOS' system database pool) at a concurrency. */
export const peerPoolSize = (concurrency: number) => Math.max(10, concurrency + 5);

/** Connections of the pool each worker process's steps use with --db-write (both peers): like an app's Prisma pool, bounded. */
export const writePoolSize = (concurrency: number) => Math.min(concurrency, 10);

export interface RunOpts {
  /** N: workflows in the saturation run. */
  workflows: number;
  /** k: trivial steps per workflow. */
  steps: number;
  /** Size in bytes of the workflow input (a string). */
  payloadBytes: number;
  /** Worker concurrency (workflows running at once in one worker process). */
  concurrency: number;
  /** End to end: concurrent callers, each starting one run at a time (awaiting it), like an app's requests. */
  callers: number;
  /** When true every step INSERTs one small row into a bench table. */
  dbWrite: boolean;
  /** Database the peer may drop and recreate for this run. */
  databaseUrl: string;
}

export interface LimitFigures {
  /** Commits/s of single-row autocommit INSERTs, measured from Node with `clients` connections. */
  nodeInsertCommitsPerSec: number;
  /** Same measured by the real pgbench, when installed. */
  pgbenchInsertCommitsPerSec?: number;
  clients: number;
  seconds: number;
  notes: string[];
}
