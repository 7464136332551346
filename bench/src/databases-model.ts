/** The databases benchmark's workload, options and figures (databases.ts runs it). */
import { percentiles } from './stats.js';

export type Db = 'postgres' | 'mariadb';
export const DBS: readonly Db[] = ['postgres', 'mariadb'];
export const LABEL: Record<Db, string> = { postgres: 'PostgreSQL', mariadb: 'MariaDB' };

export interface Shape {
  steps: number;
  payloadBytes: number;
}
export const SHAPES: readonly Shape[] = [
  { steps: 3, payloadBytes: 0 },
  { steps: 10, payloadBytes: 1024 },
];
/** The poll intervals of the start → claim measurement: the engine's default, and 100 ms. */
export const POLLS: ReadonlyArray<number | undefined> = [undefined, 100];
export const pollLabel = (p: number | undefined) => (p === undefined ? 'default (1000)' : String(p));

export interface Opts {
  workflows: number;
  concurrency: number;
  callers: number;
  rounds: number;
  latencyRuns: number;
  idleSeconds: number;
}

export interface Pcts {
  p50: number;
  p90: number;
  p99: number;
  max: number;
}
export interface LatencyFigures {
  pollIntervalMs: string;
  runs: number;
  /** started_at − created_at, ms (database clock). */
  startToClaimMs: Pcts;
  /** The first step's started_at (the checkpoint's now() minus the step's duration, so later by the checkpoint's batching) − created_at, ms. */
  startToFirstStepRowMs: Pcts;
  /** Raw start → claim delays (for pooling rounds). */
  samples: number[];
}
export interface IdleFigures {
  seconds: number;
  statementsPerSec: number;
  method: string;
  /**
   * The engine's own statements, counted on the client side (other clients of the server left out): Postgres at its pool
   * (the LISTEN session's are not; it sends none while idle), by statement name; MariaDB by a counting relay between
   * the engine and the server (mysql-count-proxy.ts), by SQL text and by protocol command.
   */
  engineStatementsPerSec: number;
  engineStatements: Record<string, number>;
  engineCommands?: Record<string, number>;
  /** MariaDB: Questions is server-wide; the other clients' connections seen during the window (none: the figure is the engine's). */
  otherConnectionsSeen?: string[];
}
export interface Measurement {
  db: Db;
  round: number;
  loadAverage: number[];
  drain: { workflowsPerSec: number; dbWallS: number; workerStartToDoneS: number };
  oneByOne: { workflowsPerSec: number; dbWallS: number; fastPathShare: number };
  latency: LatencyFigures[];
  idle: IdleFigures;
  durationS: number;
  warnings: string[];
  notes: string[];
}

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
export const round2 = (xs: number[]) => xs.map((x) => Number(x.toFixed(2)));
export const pcts = (xs: number[]): Pcts => ({ ...percentiles(xs, [50, 90, 99]), max: xs.length ? Math.max(...xs) : NaN });
