import { readFileSync } from 'node:fs';
/**
 * A job queue as the jobs comparison drives it: a single-step "job" (the peer's native job, or our
 * 1-step workflow), enqueued one at a time or in bulk, worked by workers started and stopped on
 * request. Every peer reports when a job's handler starts (node clock) and how many of its jobs
 * are still unfinished in the database (the end of a phase is read there, not from the handlers).
 */
export interface JobPeer {
  /** As shown in the table, e.g. "graphile-worker 0.18.0". */
  readonly name: string;
  /** The configuration used, printed with the figures. */
  readonly config: Record<string, unknown>;
  /** Creates the peer's tables in its (fresh) database; opens what enqueueing needs. */
  setup(): Promise<void>;
  startWorkers(): Promise<void>;
  stopWorkers(): Promise<void>;
  enqueue(id: string): Promise<void>;
  enqueueMany(ids: string[]): Promise<void>;
  /** Jobs not finished yet, from the database. */
  unfinished(): Promise<number>;
  close(): Promise<void>;
}

/** What every peer calls from its job handler. */
export interface JobHooks {
  started(id: string): void;
}

/** A pause in the phases' loops. */
export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** The installed version of a package of bench/ (read from its package.json: not every package exports that path). */
export function installedVersion(pkg: string): string {
  const file = new URL(`../../node_modules/${pkg}/package.json`, import.meta.url);
  return (JSON.parse(readFileSync(file, 'utf8')) as { version: string }).version;
}
