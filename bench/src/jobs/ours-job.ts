/**
 * Ours in the jobs comparison: a workflow of one step (Durable.step returning a number), the
 * engine's defaults except concurrency (OURS_JOB_CONCURRENCY) and a pool of 25 (graphile-worker's
 * maxPoolSize; a run whose step does no database work holds no connection, so the pool serves the
 * claims and the batched writes only); a second column runs it with history off (no run-event
 * rows: what they cost).
 * One-by-one starts go through the worker engine itself, as an app that starts runs where it works
 * them does: a start that finds a free slot takes the in-process path (inserted already claimed,
 * executed at once). Bulk starts (startMany) go through a second engine with worker: false.
 */
import { peerPoolSize } from '../figures.js';
import { createSchema, OursHost, WORKFLOW, type HostConfig } from '../peers/ours-lib.js';
import type { JobHooks, JobPeer } from './peer.js';

/**
 * Runs at once in the jobs comparison: as many jobs in hand as pg-boss holds there (4 workers ×
 * batches of 50). A job does no work, so what a run costs is its claim and its end; more runs in
 * hand make those statements larger and fewer (docs/operations.md's advice for queues of short runs, "Tuning").
 */
export const OURS_JOB_CONCURRENCY = 200;

export class OursJobPeer implements JobPeer {
  readonly name: string;
  readonly config: Record<string, unknown>;
  private client?: OursHost;
  private workers?: OursHost;
  private readonly cfg: HostConfig;
  constructor(
    url: string,
    private readonly hooks: JobHooks,
    concurrency = OURS_JOB_CONCURRENCY,
    history = true,
    /** Runs not kept (@Workflow({ deleteOnSuccess })): deleted by their end, as graphile-worker deletes a done job. */
    deleteOnSuccess = false,
  ) {
    this.name = `nestjs-durable (1-step workflow${history ? '' : ', history off'}${deleteOnSuccess ? ', not kept' : ''})`;
    this.cfg = {
      url,
      steps: 1,
      concurrency,
      dbWrite: false,
      worker: true,
      history,
      deleteOnSuccess,
      poolSize: Math.min(peerPoolSize(concurrency), 25),
    };
    this.config = { concurrency, pool: this.cfg.poolSize, history, deleteOnSuccess, pollIntervalMs: '1000 (default)', steps: 1 };
  }
  async setup(): Promise<void> {
    await createSchema(this.cfg.url);
    this.client = new OursHost({ ...this.cfg, worker: false, poolSize: 10 });
    await this.client.start();
  }
  async startWorkers(): Promise<void> {
    this.workers = new OursHost(this.cfg, undefined, (id) => this.hooks.started(id));
    await this.workers.start();
  }
  async stopWorkers(): Promise<void> {
    await this.workers?.stop();
    this.workers = undefined;
  }
  async enqueue(id: string): Promise<void> {
    await (this.workers ?? this.client)!.engine.startRun(WORKFLOW, '', { id });
  }
  async enqueueMany(ids: string[]): Promise<void> {
    for (let i = 0; i < ids.length; i += 1000)
      await this.client!.engine.startMany(ids.slice(i, i + 1000).map((id) => ({ workflow: WORKFLOW, input: '', options: { id } })));
  }
  async unfinished(): Promise<number> {
    const [row] = await this.client!.engine.storeForTools.sql.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM durable_runs WHERE status IN ('PENDING', 'RUNNING')`,
    );
    return row.n;
  }
  async close(): Promise<void> {
    await this.stopWorkers();
    await this.client?.stop();
  }
}
