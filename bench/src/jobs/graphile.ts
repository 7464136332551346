/**
 * graphile-worker as its performance page configures it for throughput
 * (https://worker.graphile.org/docs/performance): concurrentJobs 24, maxPoolSize 25, a local
 * queue of 500 (jobs fetched and locked in batches) and batched completion (completeJobBatchDelay
 * and failJobBatchDelay 0). Jobs are added with WorkerUtils (addJob one by one, addJobs in bulk).
 */
import { Logger, makeWorkerUtils, run, type Runner, type WorkerUtils } from 'graphile-worker';
import pg from 'pg';
import { installedVersion, type JobHooks, type JobPeer } from './peer.js';

const TASK = 'bench_job';
const version = installedVersion('graphile-worker');

export class GraphilePeer implements JobPeer {
  readonly name = `graphile-worker ${version}`;
  readonly config = {
    concurrentJobs: 24,
    maxPoolSize: 25,
    localQueue: { size: 500 },
    completeJobBatchDelay: 0,
    failJobBatchDelay: 0,
    pollInterval: 2000,
  };
  private utils?: WorkerUtils;
  private runner?: Runner;
  private readonly probe: pg.Pool;
  private workerPool?: pg.Pool;
  constructor(
    private readonly url: string,
    private readonly hooks: JobHooks,
  ) {
    this.probe = new pg.Pool({ connectionString: url, max: 1 });
  }
  async setup(): Promise<void> {
    this.utils = await makeWorkerUtils({ connectionString: this.url, logger: silentLogger() });
    await this.utils.migrate();
  }
  async startWorkers(): Promise<void> {
    const { concurrentJobs, maxPoolSize, localQueue, completeJobBatchDelay, failJobBatchDelay, pollInterval } = this.config;
    // The runner's pool is ours, so that a connection its stop leaves open cannot crash the bench
    // with an unhandled 'error' when the database is dropped afterwards.
    this.workerPool = new pg.Pool({ connectionString: this.url, max: maxPoolSize });
    this.workerPool.on('error', () => {});
    this.workerPool.on('connect', (client) => client.on('error', () => {}));
    this.runner = await run({
      pgPool: this.workerPool,
      concurrency: concurrentJobs,
      pollInterval,
      noHandleSignals: true,
      logger: silentLogger(),
      taskList: {
        [TASK]: async (payload) => {
          this.hooks.started((payload as { id: string }).id);
        },
      },
      preset: { worker: { localQueue, completeJobBatchDelay, failJobBatchDelay } },
    });
  }
  async stopWorkers(): Promise<void> {
    await this.runner?.stop();
    this.runner = undefined;
    await this.workerPool?.end();
    this.workerPool = undefined;
  }
  async enqueue(id: string): Promise<void> {
    await this.utils!.addJob(TASK, { id });
  }
  async enqueueMany(ids: string[]): Promise<void> {
    for (let i = 0; i < ids.length; i += 1000)
      await this.utils!.addJobs(ids.slice(i, i + 1000).map((id) => ({ identifier: TASK, payload: { id } })));
  }
  async unfinished(): Promise<number> {
    const { rows } = await this.probe.query('SELECT count(*)::int AS n FROM graphile_worker._private_jobs');
    return rows[0].n;
  }
  async close(): Promise<void> {
    await this.stopWorkers();
    await this.utils?.release();
    await this.probe.end();
  }
}

/** graphile-worker's Logger with only errors written (its info lines would mix with the bench's progress). */
function silentLogger(): Logger {
  return new Logger(() => (level, message) => {
    if (level === 'error') process.stderr.write(`[graphile-worker] ${message}\n`);
  });
}
