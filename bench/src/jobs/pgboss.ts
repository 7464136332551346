/**
 * pg-boss configured for throughput as its docs describe (docs/api/workers.md, the queue and
 * constructor options): LISTEN/NOTIFY on (useListenNotify, queue notify: true) so workers wake when a
 * job is sent; workers fetch batches (batchSize 50) and keep fetching while batches come back full
 * (burstWhenBatchFull), 4 workers per process (localConcurrency), the shortest base poll (0.5 s).
 * Jobs are sent one by one with send(), in bulk with insert().
 */
import { PgBoss } from 'pg-boss';
import pg from 'pg';
import { installedVersion, type JobHooks, type JobPeer } from './peer.js';

const QUEUE = 'bench_job';
const version = installedVersion('pg-boss');

export class PgBossPeer implements JobPeer {
  readonly name = `pg-boss ${version}`;
  readonly config = {
    constructor: { useListenNotify: true, max: 10 },
    queue: { notify: true },
    work: { batchSize: 50, localConcurrency: 4, burstWhenBatchFull: true, pollingIntervalSeconds: 0.5 },
  };
  private readonly boss: PgBoss;
  private readonly probe: pg.Pool;
  constructor(
    url: string,
    private readonly hooks: JobHooks,
  ) {
    this.boss = new PgBoss({ connectionString: url, ...this.config.constructor });
    this.boss.on('error', (e: Error) => process.stderr.write(`[pg-boss] ${e.message}\n`));
    this.probe = new pg.Pool({ connectionString: url, max: 1 });
  }
  async setup(): Promise<void> {
    await this.boss.start();
    await this.boss.createQueue(QUEUE, this.config.queue);
  }
  async startWorkers(): Promise<void> {
    await this.boss.work<{ id: string }>(QUEUE, this.config.work, async (jobs) => {
      for (const job of jobs) this.hooks.started(job.data.id);
    });
  }
  async stopWorkers(): Promise<void> {
    await this.boss.offWork(QUEUE, { wait: true });
  }
  async enqueue(id: string): Promise<void> {
    await this.boss.send(QUEUE, { id });
  }
  async enqueueMany(ids: string[]): Promise<void> {
    for (let i = 0; i < ids.length; i += 1000)
      await this.boss.insert(
        QUEUE,
        ids.slice(i, i + 1000).map((id) => ({ data: { id } })),
      );
  }
  async unfinished(): Promise<number> {
    const { rows } = await this.probe.query(
      `SELECT count(*)::int AS n FROM pgboss.job WHERE name = $1 AND state IN ('created', 'retry', 'active')`,
      [QUEUE],
    );
    return rows[0].n;
  }
  async close(): Promise<void> {
    await this.boss.stop({ graceful: true, close: true });
    await this.probe.end();
  }
}
