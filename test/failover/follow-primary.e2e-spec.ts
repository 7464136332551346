import { PrismaPg } from '@prisma/adapter-pg';
import { createPostgresPool, DurableEngine, NoPrimaryError, postgresPoolConfig, Step, WorkflowRegistry } from 'nestjs-durable';
import pg from 'pg';
import { isConnectionError } from '../../libs/durable/src/store/connection-errors.js';
import { PrismaClient } from '../../src/generated/prisma/client.js';
import { prepareClusterDatabase } from '../chaos/chaos-failover.js';
import { eventually } from '../support/engine-harness.js';
import { PgCluster } from '../support/pg-cluster.js';

/**
 * A real failover under the library's connections: a primary and a synchronous standby of the
 * tests' own, a URL naming both (the standby first), the primary's postmaster SIGKILLed, the
 * standby promoted. The pools and the engine find the new primary by themselves; no connection
 * error escapes as an unhandled 'error' event (Jest would fail the file on one).
 */
describe('following the primary through a failover', () => {
  let cluster: PgCluster;
  let url: string;
  const port = async (pool: pg.Pool) => (await pool.query<{ port: number }>('SELECT inet_server_port() AS port')).rows[0].port;
  const quiet = { log: () => {}, warn: () => {} };

  beforeAll(async () => {
    cluster = await PgCluster.start({ synchronous: true });
    const primaryFirst = await prepareClusterDatabase(cluster, 'app');
    // The standby first: finding the primary must not depend on the order of the hosts.
    url = primaryFirst.replace(/@([^/]+)\//, (_, hosts: string) => `@${hosts.split(',').reverse().join(',')}/`);
  }, 120_000);
  afterAll(async () => {
    await cluster?.stop();
  });

  it('a standby retires a connection that met "read-only transaction", instead of reusing it', async () => {
    // A synchronous standby has the commit on disk, not yet replayed: wait until it has the database and its tables.
    await eventually(
      async () => {
        const c = new pg.Client({ connectionString: cluster.standby.url('app') });
        c.on('error', () => {});
        try {
          await c.connect();
          await c.query('SELECT 1 FROM test_ledger LIMIT 1');
          return true;
        } catch {
          return false;
        } finally {
          await c.end().catch(() => {});
        }
      },
      20_000,
      'the standby to replay the database',
    );
    const standby = new pg.Pool({ ...postgresPoolConfig(cluster.standby.url('app'), { logger: quiet }), max: 1 });
    try {
      const err = await standby.query(`INSERT INTO test_ledger (run_id, step) VALUES ('x', 'y')`).catch((e: { code?: string }) => e);
      expect(err).toMatchObject({ code: '25006' });
      expect(isConnectionError(err)).toBe(true);
      const client = await standby.connect();
      await client.query('BEGIN');
      await expect(client.query(`INSERT INTO test_ledger (run_id, step) VALUES ('x', 'y')`)).rejects.toMatchObject({ code: '25006' });
      await client.query('ROLLBACK').catch(() => undefined);
      client.release(); // released without an error, as Prisma's adapter does: still dropped
      await eventually(async () => standby.totalCount === 0, 5_000, 'the retired connection to leave the pool');
    } finally {
      await standby.end();
    }
  });

  it('pools, Prisma and an engine find the new primary; nothing crashes; the LISTEN session moves too', async () => {
    const pool = createPostgresPool(url, { max: 4, logger: quiet });
    const prisma = new PrismaClient({ adapter: new PrismaPg(postgresPoolConfig(url, { max: 2, logger: quiet })) });
    const registry = new WorkflowRegistry();
    let slowCalls = 0;
    // The slow step's first execution ends only once the primary is dead (its checkpoint cannot commit there first).
    let primaryKilled = () => {};
    const killed = new Promise<void>((r) => (primaryKilled = r));
    class Steps {
      @Step() async add(n: number) {
        return n + 1;
      }
      @Step() async slow() {
        slowCalls++;
        if (slowCalls === 1) await killed;
        return slowCalls;
      }
    }
    const steps = new Steps();
    registry.register({ name: 'inc', queue: 'default', options: {}, run: async (n: unknown) => steps.add(n as number) });
    registry.register({ name: 'slow', queue: 'default', options: {}, run: async () => steps.slow() });
    const engine = new DurableEngine({
      registry,
      connection: url,
      // Polling once a minute: a run started elsewhere is claimed within seconds only if a NOTIFY reached this engine.
      options: { leaseMs: 4_000, heartbeatMs: 800, pollIntervalMs: 60_000, sweepIntervalMs: 300, logger: { ...quiet, error: () => {} } },
    });
    const starter = new DurableEngine({ registry, connection: url, options: { worker: false, logger: { ...quiet, error: () => {} } } });
    await engine.start();
    await starter.start();
    try {
      expect(await port(pool)).toBe(cluster.primary.port);
      expect(await (await engine.startRun('inc', 1, { id: 'before' })).result()).toBe(2);

      // A run executing when the primary dies, and a transaction open on it.
      const slow = await engine.startRun('slow', null, { id: 'across' });
      await eventually(async () => slowCalls === 1, 10_000, 'the slow step to start');
      const inTx = await pool.connect();
      await inTx.query('BEGIN');
      await cluster.killPrimary();
      primaryKilled();
      const lost = await inTx.query('SELECT 1').catch((e: unknown) => e);
      inTx.release(lost as Error);
      expect(isConnectionError(lost)).toBe(true);

      // Between the kill and the promotion, there is no primary: a clear, retryable error (once the pool
      // has found out that the host it knew is gone: the first attempts may meet its dead connections).
      let none: unknown;
      await eventually(
        async () => (none = await pool.query('SELECT 1').catch((e: unknown) => e)) instanceof NoPrimaryError,
        10_000,
        'NoPrimaryError',
      );
      expect(isConnectionError(none)).toBe(true);
      expect((none as NoPrimaryError).hosts.map((h) => h.host).sort()).toEqual(
        [`127.0.0.1:${cluster.primary.port}`, `127.0.0.1:${cluster.standby.port}`].sort(),
      );

      await cluster.promoteStandby();
      expect(await port(pool)).toBe(cluster.standby.port);
      await prisma.$executeRawUnsafe(`INSERT INTO test_ledger (run_id, step) VALUES ('after', 'prisma')`);
      expect(await port(pool)).toBe(cluster.standby.port);
      // The engine claims, executes and ends a run on the new primary, and listens there again: once its
      // LISTEN session has had time to reconnect (its back-off is at most 5 s), a run started by another
      // engine is claimed at once, not at the next poll a minute later. (A statement the worker issued
      // before it noticed the failover fails once, retryably, so that nothing it assumed is written there.)
      await new Promise((r) => setTimeout(r, 8_000));
      expect(await (await engine.startRun('inc', 41, { id: 'after' })).result({ timeoutMs: 30_000 })).toBe(42);
      const startedAt = Date.now();
      expect(await (await starter.startRun('inc', 9, { id: 'notified' })).result({ timeoutMs: 30_000 })).toBe(10);
      expect(Date.now() - startedAt).toBeLessThan(20_000);
      // The run executing at the failover was stopped and replayed from the new primary (it could have
      // relied on writes an asynchronous standby lost): its step ran again, its history says why.
      expect(await slow.result({ timeoutMs: 30_000 })).toBe(2);
      const history = (
        await pool.query<{ kind: string }>(`SELECT kind FROM durable_run_events WHERE run_id = 'across' ORDER BY id`)
      ).rows.map((r) => r.kind);
      expect(history.filter((k) => k === 'claimed').length).toBeGreaterThanOrEqual(2); // 3 if a lease also ran out on a loaded machine
      expect(history).toContain('released'); // handed back at the failover, fenced by its epoch
      // The run started before the failover is still there: synchronous replication lost nothing.
      expect((await pool.query(`SELECT status FROM durable_runs WHERE id = 'before'`)).rows).toEqual([{ status: 'SUCCEEDED' }]);
    } finally {
      await starter.stop();
      await engine.stop();
      await prisma.$disconnect();
      await pool.end();
    }
  }, 120_000);
});
