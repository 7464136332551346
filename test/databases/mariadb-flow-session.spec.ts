import { DurableEngine, WorkflowRegistry } from 'nestjs-durable';
import { FAST } from '../support/engine-harness.js';
import { MARIADB_AVAILABLE, openDatabase, type KindDatabase } from '../support/databases.js';

/**
 * What a limited claim leaves behind on MariaDB, and the limits view that reads it: the engine's
 * sessions end a transaction idle for a lease (a frozen process's locks go with it), the claim
 * tightens that for its transaction only (MariaDB has no transaction-local SET), so the pooled
 * connection goes back with the session's own value; queueLimits() counts a queue's running and due
 * runs.
 */
(MARIADB_AVAILABLE ? describe : describe.skip)('a limited claim on MariaDB', () => {
  let db: KindDatabase;
  let engine: DurableEngine;
  let release!: () => void;
  const held = new Promise<void>((r) => (release = r));

  beforeAll(async () => {
    db = await openDatabase('mariadb', 'flow_session');
    const registry = new WorkflowRegistry();
    registry.register({ name: 'hold', queue: 'limited', options: {}, run: async () => held });
    registry.register({ name: 'quick', queue: 'limited', options: {}, run: async () => 'done' });
    // One connection: every statement, the claims' included, runs on the session the test reads.
    engine = new DurableEngine({
      registry,
      connection: db.url,
      poolSize: 1,
      options: { ...FAST, queues: { limited: { globalConcurrency: 1 } } },
    });
    await engine.start();
  });
  afterAll(async () => {
    release();
    await engine.stop();
    await db.close();
  });

  it("puts the session's idle_transaction_timeout back after each claim, and the limits view counts running and due runs", async () => {
    const session = async () =>
      Number((await engine.storeForTools.sql.query<{ t: unknown }>('SELECT @@SESSION.idle_transaction_timeout AS t'))[0].t);
    // The engine's session: the lease (1.5 s) in whole seconds, whatever the server's default.
    const before = await session();
    expect(before).toBe(2);
    const first = await engine.startRun('hold', null);
    await engine.startRun('quick', null, { id: 'waits-for-the-slot' });
    const seen = async () => (await engine.flowControl.queueLimits()).find((q) => q.queue === 'limited');
    for (let i = 0; i < 100 && (await seen())?.running !== 1; i++) await new Promise((r) => setTimeout(r, 50));
    expect(await seen()).toMatchObject({ queue: 'limited', globalConcurrency: 1, running: 1, due: 1 });
    expect(await session()).toBe(before);
    release();
    await engine.handle(first.id).result({ timeoutMs: 10_000 });
    expect(await engine.handle('waits-for-the-slot').result({ timeoutMs: 10_000 })).toBe('done');
  });

  it('ends a transaction of the engine left idle for a lease (a frozen process), and its row locks with it', async () => {
    let resumed = false;
    const frozen = engine.storeForTools.sql.transaction(async (sql) => {
      await sql.query('SELECT id FROM durable_runs WHERE id = ? FOR UPDATE', ['waits-for-the-slot']);
      await new Promise((r) => setTimeout(r, 4_000)); // stopped inside its transaction, past the 2 s limit
      resumed = true;
      await sql.query('SELECT 1');
    });
    const outcome = frozen.then(
      () => 'committed',
      (err: Error) => err.message,
    );
    await new Promise((r) => setTimeout(r, 200));
    // Another session's write of the locked row waits only until the server ends the idle transaction.
    await db.query('UPDATE durable_runs SET updated_at = updated_at WHERE id = ?', ['waits-for-the-slot']);
    expect(resumed).toBe(false);
    expect(await outcome).not.toBe('committed');
  });
});
