import { DurableEngine, KeyConflictError, WorkflowRegistry } from 'nestjs-durable';
import { eventually, FAST } from '../support/engine-harness.js';
import { DATABASES, openDatabase, type KindDatabase } from '../support/databases.js';

/**
 * Resuming a run whose singleton (dedupe) or debounce key another run holds now would make two:
 * on every database the engine refuses with KeyConflictError, which names the key's index, and
 * leaves both runs as they were. (PostgreSQL reports it as 23505 on a partial unique index, MariaDB
 * as 1062 on the unique index over a generated column.)
 */
describe.each(DATABASES)('resume against a held key on %s', (kind) => {
  let db: KindDatabase;
  let engine: DurableEngine;
  const release = new Map<string, () => void>();

  beforeAll(async () => {
    db = await openDatabase(kind, `keyed_resume_${kind}`);
    const registry = new WorkflowRegistry();
    registry.register({
      name: 'sync',
      queue: 'sync',
      options: {},
      run: (i: unknown) => new Promise((r) => release.set((i as { id: string }).id, () => r('done'))),
    });
    engine = new DurableEngine({ registry, connection: db.url, prisma: db.prisma, options: FAST });
    await engine.start();
  });
  afterAll(async () => {
    for (const r of release.values()) r();
    await engine.stop();
    await db.close();
  });

  const status = async (id: string) =>
    (await db.query<{ status: string }>('SELECT status FROM durable_runs WHERE id = ?', [id]))[0]?.status;

  it('a cancelled singleton run cannot be resumed while another run holds its dedupe key', async () => {
    const first = await engine.startRun('sync', { id: 'a' }, { dedupeKey: 'account-1' });
    await eventually(async () => release.has('a'));
    await engine.cancel(first.id);
    const holder = await engine.startRun('sync', { id: 'b' }, { dedupeKey: 'account-1' });
    expect(holder.outcome).toBe('started');

    const err = await engine.resume(first.id).catch((x: unknown) => x);
    expect(err).toBeInstanceOf(KeyConflictError);
    expect(err).toMatchObject({ code: 'KEY_CONFLICT', runId: first.id, index: 'dedupe' });
    expect((err as Error).message).toContain('dedupe key');
    expect([await status(first.id), await status(holder.id)]).toEqual(['CANCELLED', expect.stringMatching(/^(PENDING|RUNNING)$/)]);

    // Once the holder has ended, the resume goes through.
    await eventually(async () => release.has('b'));
    release.get('b')!();
    await holder.result({ timeoutMs: 10_000 });
    await engine.resume(first.id);
    await eventually(async () => release.has('a') && (await status(first.id)) === 'RUNNING');
  });

  it('a cancelled debounced run cannot be resumed while another run of its key waits to start', async () => {
    const at = Date.now() + 60_000;
    const first = await engine.startRun('sync', { id: 'c' }, { debounce: { key: 'reindex', periodMs: 60_000 } });
    await engine.cancel(first.id);
    const waiting = await engine.startRun('sync', { id: 'd' }, { debounce: { key: 'reindex', periodMs: 60_000 } });
    expect(waiting.id).not.toBe(first.id);

    const err = await engine.resume(first.id).catch((x: unknown) => x);
    expect(err).toBeInstanceOf(KeyConflictError);
    expect(err).toMatchObject({ code: 'KEY_CONFLICT', index: 'debounce' });
    expect([await status(first.id), await status(waiting.id)]).toEqual(['CANCELLED', 'PENDING']);
    expect(Date.now()).toBeLessThan(at);
  });
});
