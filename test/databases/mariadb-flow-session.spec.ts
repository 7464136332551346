import { DurableEngine, WorkflowRegistry } from 'nestjs-durable';
import { FAST } from '../support/engine-harness.js';
import { MARIADB_AVAILABLE, openDatabase, type KindDatabase } from '../support/databases.js';

/**
 * What a limited claim leaves behind on MariaDB, and the limits view that reads it: the claim sets
 * the session's idle_transaction_timeout for its transaction only (MariaDB has no transaction-local
 * SET), so the pooled connection goes back with the session's own value; queueLimits() counts a
 * queue's running and due runs.
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
    const [{ t: before }] = await db.query<{ t: unknown }>('SELECT @@GLOBAL.idle_transaction_timeout AS t');
    const first = await engine.startRun('hold', null);
    await engine.startRun('quick', null, { id: 'waits-for-the-slot' });
    const seen = async () => (await engine.flowControl.queueLimits()).find((q) => q.queue === 'limited');
    for (let i = 0; i < 100 && (await seen())?.running !== 1; i++) await new Promise((r) => setTimeout(r, 50));
    expect(await seen()).toMatchObject({ queue: 'limited', globalConcurrency: 1, running: 1, due: 1 });
    const [{ t }] = await engine.storeForTools.sql.query<{ t: unknown }>('SELECT @@SESSION.idle_transaction_timeout AS t');
    expect(Number(t)).toBe(Number(before));
    release();
    await engine.handle(first.id).result({ timeoutMs: 10_000 });
    expect(await engine.handle('waits-for-the-slot').result({ timeoutMs: 10_000 })).toBe('done');
  });
});
