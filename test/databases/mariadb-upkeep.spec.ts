import { createConnection } from 'mariadb';
import { DurableEngine, WorkflowRegistry } from 'nestjs-durable';
import { eventually, FAST, sleep } from '../support/engine-harness.js';
import { MARIADB_AVAILABLE, openDatabase, type KindDatabase } from '../support/databases.js';
import { MARIADB_SERVER } from '../support/mariadb.js';

/**
 * On MariaDB a worker renews its leases and sweeps on connections of its own (PostgreSQL renews on
 * its LISTEN session): when every connection of the engine's pool waits for one row lock — starts
 * of one debounce key queue behind a transaction that holds the key's run — the runs it executes
 * keep their leases.
 */
(MARIADB_AVAILABLE ? describe : describe.skip)('leases on MariaDB while the pool waits for a lock', () => {
  let db: KindDatabase;
  let engine: DurableEngine;
  let release!: () => void;
  const held = new Promise<void>((r) => (release = r));

  beforeAll(async () => {
    db = await openDatabase('mariadb', 'upkeep');
    const registry = new WorkflowRegistry();
    registry.register({ name: 'hold', queue: 'default', options: {}, run: async () => held.then(() => 'done') });
    registry.register({ name: 'later', queue: 'default', options: {}, run: async () => 'later' });
    engine = new DurableEngine({ registry, connection: db.url, poolSize: 2, options: FAST });
    await engine.start();
  });
  afterAll(async () => {
    release();
    await engine.stop();
    await db.close();
  });

  it('keeps the leases of its runs for longer than a lease while every pooled connection waits', async () => {
    const run = await engine.startRun('hold', null);
    await eventually(
      async () => (await db.query<{ status: string }>('SELECT status FROM durable_runs WHERE id = ?', [run.id]))[0]?.status === 'RUNNING',
    );
    const [before] = await db.query<{ lease_owner: string; lease_epoch: number }>(
      'SELECT lease_owner, lease_epoch FROM durable_runs WHERE id = ?',
      [run.id],
    );
    const key = (k: string) => ({ debounce: { key: k, periodMs: 60_000 } });
    const pending = [await engine.startRun('later', null, key('k1')), await engine.startRun('later', null, key('k2'))];

    // Another session holds both keys' runs; a start of each key takes one pooled connection and waits.
    const holder = await lockingSession(db.name);
    await holder.beginTransaction();
    for (const p of pending) await holder.query('SELECT id FROM durable_runs WHERE id = ? FOR UPDATE', [p.id]);
    const starts = [engine.startRun('later', null, key('k1')), engine.startRun('later', null, key('k2'))];
    await sleep(FAST.leaseMs! * 2.5);

    const [during] = await db.query<{ lease_owner: string; lease_epoch: number; status: string; fresh: unknown }>(
      'SELECT lease_owner, lease_epoch, status, lease_expires_at > UTC_TIMESTAMP(3) AS fresh FROM durable_runs WHERE id = ?',
      [run.id],
    );
    await holder.rollback();
    await holder.end();
    expect({ ...during, fresh: Number(during.fresh) }).toEqual({ ...before, status: 'RUNNING', fresh: 1 });
    expect((await Promise.all(starts)).map((h) => h.id)).toEqual(pending.map((p) => p.id));
    const lost = await db.query(
      "SELECT kind FROM durable_run_events WHERE run_id = ? AND kind IN ('lease_lost', 'lease_expired', 'released')",
      [run.id],
    );
    expect(lost).toEqual([]);
    release();
    expect(await run.result({ timeoutMs: 10_000 })).toBe('done');
  });

  it('parks one connection per debounce key, not one per start: a burst of starts of a held key leaves the pool to other work', async () => {
    const key = { debounce: { key: 'burst', periodMs: 60_000 } };
    const pending = await engine.startRun('later', null, key);
    const holder = await lockingSession(db.name);
    await holder.beginTransaction();
    await holder.query('SELECT id FROM durable_runs WHERE id = ? FOR UPDATE', [pending.id]);
    const burst = Array.from({ length: 6 }, () => engine.startRun('later', null, key));
    await sleep(200);
    // The pool has two connections; one waits for the key, the other starts and runs a run meanwhile.
    const other = await engine.startRun('later', null);
    expect(await other.result({ timeoutMs: 5_000 })).toBe('later');
    await holder.rollback();
    await holder.end();
    expect(new Set((await Promise.all(burst)).map((h) => h.id))).toEqual(new Set([pending.id]));
  });
});

/** A session of its own on the test database, READ COMMITTED as the engine's (it locks only the rows it names). */
async function lockingSession(database: string) {
  const u = new URL(MARIADB_SERVER);
  const c = await createConnection({
    host: u.hostname,
    port: Number(u.port || 3306),
    user: decodeURIComponent(u.username) || 'root',
    database,
  });
  await c.query('SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED');
  return c;
}
