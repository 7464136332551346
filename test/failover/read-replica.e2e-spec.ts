import { DurableModule, InvalidOptionsError, WorkflowClient } from 'nestjs-durable';
import pg from 'pg';
import request from 'supertest';
import { runRunsCommand } from '../../libs/durable/src/cli/runs-command.js';
import { eventually } from '../support/engine-harness.js';
import { PrismaService, startReplicaApp, type ReplicaApp } from './replica-app.js';

/**
 * admin.readReplicaUrl on a real primary + hot standby: the runs list, its counts and the statistics
 * come from the standby (its connections show up there), the statistics carry its lag, an action
 * goes to the primary (a standby would refuse it), and the CLI's `runs list --read-url` reads there too.
 */
describe('the admin API on a read replica', () => {
  let r: ReplicaApp;
  let primaryUrl: string;
  let standbyUrl: string;
  const get = (path: string) => request(r.app.getHttpServer()).get(`/durable/${path}`);
  const onStandby = async (sql: string) => {
    const c = new pg.Client({ connectionString: standbyUrl });
    await c.connect();
    try {
      return (await c.query(sql)).rows;
    } finally {
      await c.end();
    }
  };

  beforeAll(async () => {
    r = await startReplicaApp();
    ({ primaryUrl, standbyUrl } = r);
  }, 120_000);
  afterAll(async () => {
    await r?.close();
  });

  it('lists and counts from the standby, shows its lag, and acts on the primary', async () => {
    const client = r.app.get(WorkflowClient);
    const handles = await Promise.all(Array.from({ length: 5 }, (_, i) => client.start('replica.one', null, { id: `rr-${i}` })));
    await eventually(
      async () => (await get('runs?workflow=replica.one').expect(200)).body.items.length === 5,
      10_000,
      'the standby to show the runs',
    );
    const stats = (await get('stats').expect(200)).body;
    expect(stats.readReplica).toEqual({ standby: true, lagMs: expect.any(Number) });
    expect(stats.readReplica.lagMs).toBeGreaterThanOrEqual(0);
    expect(stats.totals.counts.PENDING).toBe(5);
    // The reads really went to the standby: its connections are there, under the replica's name.
    const names = (await onStandby(`SELECT application_name AS n FROM pg_stat_activity WHERE datname = 'app'`)).map((r) => r.n);
    expect(names).toContain('nestjs-durable admin (read replica)');
    // An action goes to the primary (the standby would answer "read-only transaction").
    await request(r.app.getHttpServer()).post(`/durable/runs/${handles[0].id}/cancel`).send({}).expect(200);
    await eventually(
      async () => (await get('runs?status=CANCELLED').expect(200)).body.items.map((r: { id: string }) => r.id).join() === 'rr-0',
      10_000,
      'the cancel to reach the standby',
    );
  });

  it('runs list --read-url reads from the replica; other commands refuse it', async () => {
    const out: string[] = [];
    const err: string[] = [];
    const io = { cwd: '.', out: (t: string) => out.push(t), err: (t: string) => err.push(t) };
    expect(
      await runRunsCommand(['list', '--workflow', 'replica.one', '--json', '--read-url', standbyUrl], io, { DATABASE_URL: primaryUrl }),
    ).toBe(0);
    expect(JSON.parse(out.join('')).items).toHaveLength(5);
    expect(await runRunsCommand(['show', 'rr-1', '--read-url', standbyUrl], io, { DATABASE_URL: primaryUrl })).toBe(2);
    expect(err.join('')).toContain('--read-url goes with "runs list"');
    expect(await runRunsCommand(['list', '--read-url', 'mysql://x'], io, { DATABASE_URL: primaryUrl })).toBe(2);
  });

  it('refuses a read replica that is not a Postgres URL, at boot', () => {
    expect(() => DurableModule.forRoot({ prisma: PrismaService, admin: { unsafeNoGuard: true, readReplicaUrl: 'replica-host' } })).toThrow(
      InvalidOptionsError,
    );
    expect(() =>
      DurableModule.forRoot({ prisma: PrismaService, admin: { unsafeNoGuard: true, readReplicaUrl: 'postgresql://db1,:5432/app' } }),
    ).toThrow(InvalidOptionsError);
  });
});
