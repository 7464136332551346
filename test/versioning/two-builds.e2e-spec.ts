import { spawn } from 'node:child_process';
import { join } from 'node:path';
import pg from 'pg';
import { verifyApp, type DurableEngine, type VerifyReport } from 'nestjs-durable';
import { EngineHarness, eventually, sleep } from '../support/engine-harness.js';
import { urlFor } from '../support/db.js';
import { WorkerProcess } from '../support/processes.js';
import { AppModule as BuildTwo } from './app-v2.js';

/** `npx nestjs-durable verify` as a user runs it: the package's command line in its own process. */
function verifyCli(databaseUrl: string, module: string): Promise<{ code: number | null; out: string; err: string }> {
  const child = spawn(
    process.execPath,
    ['--import', 'tsx', join(process.cwd(), 'libs/durable/src/cli/main.ts'), 'verify', '--module', module, '--json'],
    { env: { ...process.env, NODE_OPTIONS: '', DATABASE_URL: databaseUrl }, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let out = '';
  let err = '';
  child.stdout.on('data', (d) => (out += d));
  child.stderr.on('data', (d) => (err += d));
  return new Promise((resolve) => child.on('exit', (code) => resolve({ code, out, err })));
}

const BUILD = 'test/versioning/build-main.ts';
const STEPS_V1_PAID = ['reserve', 'validate', 'durable.recv:paid', 'charge', 'email', 'receipt'];

/**
 * Two builds of the same app (test/versioning/app-v1.ts, app-v2.ts), each in its own process. Build 1
 * leaves runs suspended in recv; build 2 inserts a step behind Durable.patched(), removes one and
 * swaps two. verify predicts exactly which runs build 2 breaks, writing nothing; after the deploy
 * the others complete and the predicted ones fail where verify said.
 */
describe('versioning: two builds, verify, deploy', () => {
  let h: EngineHarness;
  /** Clients of each build (a run records the version of the code that started it). */
  let client: DurableEngine;
  let client2: DurableEngine;
  let stats: pg.Client;
  /** The test's own reads (ended before verify's counters are taken: a session's statistics reach pg_stat_database when it ends). */
  let reads: pg.Pool;
  const query = async <T = any>(sql: string, params: unknown[] = []) => (await reads.query(sql, params)).rows as T[];
  const workers: WorkerProcess[] = [];
  beforeAll(async () => {
    h = await EngineHarness.create('two_builds');
    client = await h.engine({ order: async () => null }, { worker: false, appVersion: '1' });
    client2 = await h.engine({ order: async () => null }, { worker: false, appVersion: '2' });
    reads = new pg.Pool({ connectionString: h.db.url, max: 2 });
    stats = new pg.Client({ connectionString: urlFor('postgres') });
    await stats.connect();
  });
  const databaseUrl = process.env.DATABASE_URL;
  afterAll(async () => {
    if (databaseUrl === undefined) delete process.env.DATABASE_URL;
    else process.env.DATABASE_URL = databaseUrl;
    for (const w of workers) await w.stop();
    await stats.end();
    await reads.end().catch(() => {});
    await h.close();
  });

  const stepNames = async (id: string) =>
    (await query<{ name: string }>('SELECT name FROM durable_steps WHERE run_id = $1 ORDER BY seq', [id])).map((r) => r.name);
  const status = async (id: string) => (await query('SELECT status FROM durable_runs WHERE id = $1', [id]))[0]?.status;
  /** What the database did, from another database's session (so reading it adds nothing to the test database's counters). */
  const dbCounters = async () => {
    await stats.query('SELECT pg_stat_clear_snapshot()');
    const { rows } = await stats.query(
      'SELECT xact_commit, xact_rollback, tup_inserted, tup_updated, tup_deleted FROM pg_stat_database WHERE datname = $1',
      [h.db.name],
    );
    return Object.fromEntries(Object.entries(rows[0]).map(([k, v]) => [k, Number(v)]));
  };
  /** The counters once no session of the test database is left (and at least `rollbacks` transactions rolled back). */
  const quietCounters = async (rollbacks = 0) => {
    for (const until = Date.now() + 10_000; ; await sleep(50)) {
      const { rows } = await stats.query('SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = $1', [h.db.name]);
      const c = await dbCounters();
      if ((rows[0].n === 0 && c.xact_rollback >= rollbacks) || Date.now() > until) return c;
    }
  };
  const tableState = async () =>
    (
      await query(`SELECT (SELECT count(*) FROM durable_runs)::int AS runs, (SELECT count(*) FROM durable_steps)::int AS steps,
        (SELECT count(*) FROM durable_messages)::int AS messages, (SELECT count(*) FROM durable_run_events)::int AS events,
        (SELECT md5(string_agg(id || status || lease_epoch || updated_at::text, ',' ORDER BY id)) FROM durable_runs) AS runs_hash`)
    )[0];

  const waitingAt = (ids: string[], names: string[]) =>
    eventually(
      async () => {
        for (const id of ids) if ((await status(id)) !== 'WAITING' || (await stepNames(id)).join() !== names.join()) return false;
        return true;
      },
      20_000,
      `${ids.join(', ')} WAITING after ${names.join(', ')}`,
    );

  const A = ['a1', 'a2', 'a3']; // suspended in recv('paid'): passed validate (removed in build 2) only
  const B = ['b1', 'b2', 'b3']; // suspended in recv('shipped'): passed email, receipt (swapped in build 2)

  it('build 1 leaves runs suspended in recv', async () => {
    workers.push(await WorkerProcess.start(h.db.url, { BUILD: 'v1' }, BUILD));
    for (const id of [...A, ...B]) await client.startRun('order', { order: id }, { id });
    await waitingAt([...A, ...B], ['reserve', 'validate']);
    for (const id of B) await client.send(id, 'paid', { amount: 10 });
    await waitingAt(B, STEPS_V1_PAID);
    expect((await client.getRun('a1'))?.appVersion).toBe('1');
    await workers.pop()!.stop();
  });

  let predicted: VerifyReport;
  it('verify: build 1 replays every run; build 2 would fail exactly the runs past the swap, and verify writes nothing', async () => {
    const tablesBefore = await tableState();
    // Every session this test opened ends first: Postgres holds an idle session's statistics back
    // (up to 10 s) but publishes them when it ends, so what follows counts the verify processes' only.
    await client.stop();
    await client2.stop();
    await reads.end();
    const before = await quietCounters();
    const one = await verifyCli(h.db.url, 'test/versioning/app-v1.ts');
    expect({ code: one.code, report: JSON.parse(one.out) }).toMatchObject({ code: 0, report: { ok: true, checked: 6, failed: 0 } });
    const two = await verifyCli(h.db.url, 'test/versioning/app-v2.ts');
    expect(two.code).toBe(1);
    predicted = JSON.parse(two.out) as VerifyReport;
    expect(predicted).toMatchObject({ ok: false, checked: 6, failed: 3 });
    expect(predicted.workflows).toHaveLength(1);
    expect(predicted.workflows[0]).toMatchObject({ workflow: 'order', checked: 6, failed: 3 });
    expect(predicted.workflows[0].failures.map((f) => ({ ...f, message: undefined }))).toEqual(
      B.map((runId) => ({
        runId,
        status: 'WAITING',
        appVersion: '1',
        kind: 'reordered',
        seq: 4,
        recorded: 'email',
        actual: 'receipt',
        message: undefined,
      })),
    );
    const after = await quietCounters(before.xact_rollback + 2);
    // Nothing written: no tuple inserted, updated or deleted. Each verify process opened one session
    // (its startup reads the catalogs in a transaction of its own: one commit) and rolled its one
    // READ ONLY transaction back.
    expect(after).toEqual({
      ...before,
      xact_commit: before.xact_commit + 2,
      xact_rollback: before.xact_rollback + 2,
    });
    reads = new pg.Pool({ connectionString: h.db.url, max: 2 });
    expect(await tableState()).toEqual(tablesBefore);
    client = await h.engine({ order: async () => null }, { worker: false, appVersion: '1' });
    client2 = await h.engine({ order: async () => null }, { worker: false, appVersion: '2' });
  });

  it('verifyApp(): the same report from a test, in process', async () => {
    process.env.DATABASE_URL = h.db.url; // what the app's DurableModule connects with (restored in afterAll)
    const report = await verifyApp(BuildTwo, { logger: false });
    expect(report.workflows[0].failures.map((f) => [f.runId, f.seq, f.recorded, f.actual])).toEqual(
      predicted.workflows[0].failures.map((f) => [f.runId, f.seq, f.recorded, f.actual]),
    );
  });

  it('after deploying build 2: old runs that can replay complete, new runs take the patch, the predicted ones fail as predicted', async () => {
    workers.push(await WorkerProcess.start(h.db.url, { BUILD: 'v2' }, BUILD));
    await client2.startRun('order', { order: 'n1' }, { id: 'n1' });
    await waitingAt(['n1'], ['reserve', 'durable.patch:fraud-check', 'fraud-check']);
    for (const id of [...A, 'n1']) await client.send(id, 'paid', { amount: 10 });
    for (const id of [...A, ...B, 'n1']) await client.send(id, 'shipped', { carrier: 'x' });
    await eventually(async () => {
      for (const id of [...A, ...B, 'n1']) if (!['SUCCEEDED', 'FAILED'].includes((await status(id)) ?? '')) return false;
      return true;
    }, 30_000);
    const tail = ['durable.recv:paid', 'charge', 'receipt', 'email', 'durable.recv:shipped', 'close'];
    for (const id of A) {
      expect(await client.getRun(id)).toMatchObject({ status: 'SUCCEEDED', output: `closed ${id}` });
      expect(await stepNames(id)).toEqual(['reserve', 'validate', ...tail]); // no fraud check: patched() was false
    }
    expect(await client.getRun('n1')).toMatchObject({ status: 'SUCCEEDED', appVersion: '2' });
    expect(await stepNames('n1')).toEqual(['reserve', 'durable.patch:fraud-check', 'fraud-check', ...tail]);
    for (const f of predicted.workflows[0].failures) {
      const run = await client.getRun(f.runId);
      expect(run?.status).toBe('FAILED');
      expect((run?.error as { message: string }).message).toBe(f.message);
      expect(await stepNames(f.runId)).toEqual(STEPS_V1_PAID); // nothing ran after the mismatch
    }
  });

  it('verify --finished-within: nothing is in flight now; of the runs finished in the last hour, the failed ones still do not replay', async () => {
    const inFlight = await verifyApp(BuildTwo, { logger: false });
    expect(inFlight).toMatchObject({ ok: true, checked: 0, failed: 0 });
    const recent = await verifyApp(BuildTwo, { logger: false, finishedWithinMs: 3_600_000 });
    expect(recent).toMatchObject({ ok: false, checked: 7, failed: 3 });
    expect(recent.workflows[0].failures.map((f) => [f.runId, f.status, f.kind])).toEqual(B.map((id) => [id, 'FAILED', 'reordered']));
  });
});
