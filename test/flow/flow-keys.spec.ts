import { DurableEngine, KeyConflictError, WorkflowRegistry, type WorkflowOptions } from 'nestjs-durable';
import { eventually, sleep, STEADY } from '../support/engine-harness.js';
import { DATABASES, openDatabase, type KindDatabase } from '../support/databases.js';

/**
 * Rate limits, singleton runs (dedupeKey) and debounce inside one process: what a start returns
 * (handle.outcome), what the rows say, what whyNotStarted says, and the runtime change of a rate.
 * On every database the engine supports. (Across three processes: flow-keys-processes.e2e-spec.ts.)
 */
describe.each(DATABASES)('flow control: rate limits, singleton runs, debounce on %s', (kind) => {
  let db: KindDatabase;
  const engines: DurableEngine[] = [];
  const seen: Array<{ id: string; input: unknown }> = [];
  const release = new Map<string, () => void>();
  const workflows = {
    sync: [
      async (i: { id: string }) => {
        await new Promise<void>((r) => release.set(i.id, r));
        return i.id;
      },
      { queue: 'sync' },
    ],
    reindex: [
      async (i: unknown) => {
        seen.push({ id: 'reindex', input: i });
        return i;
      },
      { queue: 'search' },
    ],
    call: [async (i: { n: number }) => i.n, { queue: 'api', concurrencyKey: (i: { tenant?: string }) => i.tenant ?? null }],
  } as const;
  const row = async (id: string) => (await db.query<Record<string, any>>(`SELECT * FROM durable_runs WHERE id = ?`, [id]))[0];
  const count = async (sql: string, params: unknown[] = []) => Number((await db.query<{ n: unknown }>(sql, params))[0].n);

  async function engine(defs: Record<string, readonly [(input: any) => Promise<unknown>, WorkflowOptions]>): Promise<DurableEngine> {
    const registry = new WorkflowRegistry();
    for (const [name, [run, options]] of Object.entries(defs)) registry.register({ name, queue: options.queue ?? 'default', options, run });
    const e = new DurableEngine({ registry, connection: db.url, prisma: db.prisma, options: STEADY });
    engines.push(e);
    await e.start();
    return e;
  }
  const stopEngines = () => engines.splice(0).reduce((p, x) => p.then(() => x.stop()), Promise.resolve());

  beforeAll(async () => {
    db = await openDatabase(kind, `flow_keys_${kind}`);
  });
  afterAll(async () => {
    for (const r of release.values()) r();
    await stopEngines();
    await db.close();
  });

  it('singleton: a start with the dedupe key of an active run returns that run; once it ended, a new one starts', async () => {
    const e = await engine(workflows);
    const first = await e.startRun('sync', { id: 'a' }, { dedupeKey: 'account-1' });
    expect(first.outcome).toBe('started');
    const again = await e.startRun('sync', { id: 'b' }, { dedupeKey: 'account-1' });
    expect(again).toMatchObject({ id: first.id, outcome: 'deduplicated' });
    // another key, and the same key in another workflow's scope, are separate
    const other = await e.startRun('sync', { id: 'c' }, { dedupeKey: 'account-2' });
    expect(other.outcome).toBe('started');
    // an id that exists wins over the key (idempotent start by id)
    expect((await e.startRun('sync', { id: 'a' }, { id: first.id, dedupeKey: 'account-9' })).outcome).toBe('existing');
    // inside the caller's transaction too
    const inTx = await db.prisma.$transaction((tx: any) => e.startRun('sync', { id: 'd' }, { tx, dedupeKey: 'account-1' }));
    expect(inTx).toMatchObject({ id: first.id, outcome: 'deduplicated' });

    await eventually(async () => release.has('a'));
    release.get('a')!();
    await first.result({ timeoutMs: 10_000 });
    const next = await e.startRun('sync', { id: 'e' }, { dedupeKey: 'account-1' });
    expect(next.outcome).toBe('started');
    expect(next.id).not.toBe(first.id);
    expect((await row(next.id)).dedupe_key).toBe('account-1');
    expect(await count(`SELECT count(*) AS n FROM durable_runs WHERE dedupe_key = 'account-1'`)).toBe(2);

    // resuming a finished run whose key an active run holds would make two: a typed error says so
    await eventually(async () => release.has('e'));
    await e.cancel(next.id);
    const holder = await e.startRun('sync', { id: 'f' }, { dedupeKey: 'account-1' });
    expect(holder.outcome).toBe('started');
    const err = await e.resume(next.id).catch((x: unknown) => x);
    expect(err).toBeInstanceOf(KeyConflictError);
    expect((err as KeyConflictError).code).toBe('KEY_CONFLICT');
    expect((err as Error).message).toMatch(/another run holds its dedupe key/);
    for (const r of release.values()) r();
    await stopEngines();
  });

  it('debounce: starts within the window collapse into one run that starts after the last of them, with the last input', async () => {
    const e = await engine(workflows);
    const t0 = Date.now();
    const first = await e.startRun('reindex', { v: 1 }, { debounce: { key: 'doc-7', periodMs: 800 } });
    expect(first.outcome).toBe('started');
    for (let v = 2; v <= 4; v++) {
      await sleep(200);
      const h2 = await e.startRun('reindex', { v }, { debounce: { key: 'doc-7', periodMs: 800 } });
      expect(h2).toMatchObject({ id: first.id, outcome: 'debounced' });
    }
    const why = await e.flowControl.whyNotStarted(first.id);
    expect(why!.debounceKey).toBe('doc-7');
    expect(why!.reasons[0]).toMatch(/^debounced \(key doc-7\): starts until .*Z \(in 1 s\) unless another start with the key pushes it$/);
    expect(await first.result({ timeoutMs: 10_000 })).toEqual({ v: 4 });
    const r = await row(first.id);
    // started 800 ms after the last start (~600 ms after the first), not after the first
    expect(r.started_at.getTime() - t0).toBeGreaterThanOrEqual(1_350);
    expect(seen.filter((s) => s.id === 'reindex')).toHaveLength(1);
    // the history says which starts joined
    expect(await count(`SELECT count(*) AS n FROM durable_run_events WHERE run_id = ? AND kind = 'debounced'`, [first.id])).toBe(3);
    // once it started, the next start makes a new run
    const later = await e.startRun('reindex', { v: 5 }, { debounce: { key: 'doc-7', periodMs: 100 } });
    expect(later.outcome).toBe('started');
    expect(await later.result({ timeoutMs: 10_000 })).toEqual({ v: 5 });
  });

  it('debounce keeps the first input when asked, and maxDelayMs bounds how far starts push it', async () => {
    const e = engines[0];
    const t0 = Date.now();
    const first = await e.startRun(
      'reindex',
      { v: 'first' },
      { debounce: { key: 'k2', periodMs: 600, maxDelayMs: 1_000, input: 'first' } },
    );
    // a start every 150 ms for 2 s would postpone it forever without the maximum
    let joined = 0;
    while (Date.now() - t0 < 2_000) {
      const x = await e.startRun('reindex', { v: 'later' }, { debounce: { key: 'k2', periodMs: 600, maxDelayMs: 1_000, input: 'first' } });
      if (x.id === first.id) joined++;
      await sleep(150);
    }
    expect(joined).toBeGreaterThan(2);
    const r = await row(first.id);
    expect(r.input).toEqual({ v: 'first' });
    // Without the maximum, the starts of the last 2 s would have pushed it past 2.6 s; a claim on a loaded
    // machine (MariaDB polls for due runs) may come up to a second after it is due.
    expect(r.started_at.getTime() - r.created_at.getTime()).toBeLessThan(2_000);
    expect(r.started_at.getTime() - r.created_at.getTime()).toBeGreaterThanOrEqual(990);
    expect(await first.result({ timeoutMs: 10_000 })).toEqual({ v: 'first' });
  });

  it('debounce: a start whose transaction began first and commits last does not pull the run ahead of a later start', async () => {
    const e = engines[0] ?? (await engine(workflows));
    const debounce = { key: 'k3', periodMs: 5_000 };
    const first = await e.startRun('reindex', { v: 1 }, { debounce });
    // Its transaction begins (now() is fixed there), then another start joins and commits, then it joins.
    await db.prisma.$transaction(async (tx: any) => {
      await tx.$queryRaw`SELECT 1`;
      await sleep(300);
      expect((await e.startRun('reindex', { v: 2 }, { debounce })).id).toBe(first.id);
      expect((await e.startRun('reindex', { v: 3 }, { debounce, tx })).id).toBe(first.id);
    });
    const joined = await db.query<{ at: Date }>(`SELECT at FROM durable_run_events WHERE run_id = ? AND kind = 'debounced'`, [first.id]);
    const r = await row(first.id);
    // It starts 5 s after the later start (v 2), not 5 s after the time the last-committed transaction began.
    expect(r.available_at.getTime()).toBeGreaterThanOrEqual(Math.max(...joined.map((j) => j.at.getTime())) + 5_000);
    expect(r.input).toEqual({ v: 3 });
    await e.cancel(first.id);
  });

  it('rate limit: at most N starts in any window, whyNotStarted says until when; changed at runtime', async () => {
    const e = engines[0];
    await e.flowControl.setQueueLimits('api', { rateLimit: { limit: 5, periodMs: 1_500 } });
    const handles = await e.startMany(Array.from({ length: 12 }, (_, n) => ({ workflow: 'call', input: { n } })));
    await eventually(
      async () => (await count(`SELECT count(*) AS n FROM durable_runs WHERE queue = 'api' AND started_at IS NOT NULL`)) === 5,
    );
    await sleep(300);
    const waiting = (await db.query<{ id: string }>(`SELECT id FROM durable_runs WHERE queue = 'api' AND started_at IS NULL LIMIT 1`))[0]
      .id;
    const why = await e.flowControl.whyNotStarted(waiting);
    expect(why!.reasons).toHaveLength(1);
    expect(why!.reasons[0]).toMatch(/^rate limited until \d{4}-.*Z \(queue api: 5 starts per 1500 ms\)$/);
    expect(why!.rateLimitedUntil).not.toBeNull();
    const [usage] = await e.flowControl.queueLimits();
    expect(usage).toMatchObject({ queue: 'api', rateLimit: { limit: 5, periodMs: 1_500 }, rateUsed: 5 });
    expect(usage.rateLimitedUntil).toBe(why!.rateLimitedUntil);
    await Promise.all(handles.map((x) => x.result({ timeoutMs: 20_000 })));
    const starts = (await db.query<{ t: Date }>(`SELECT started_at AS t FROM durable_runs WHERE queue = 'api' ORDER BY started_at`)).map(
      (x) => x.t.getTime(),
    );
    for (let i = 0; i < starts.length; i++)
      expect(starts.filter((t) => t >= starts[i] && t < starts[i] + 1_500).length).toBeLessThanOrEqual(5);

    // per key, changed at runtime: 2 per key per second, no queue-wide rate
    await e.flowControl.setQueueLimits('api', { keyRateLimit: { limit: 2, periodMs: 1_000 } });
    const keyed = await e.startMany(
      Array.from({ length: 8 }, (_, n) => ({ workflow: 'call', input: { n, tenant: n % 2 ? 'b' : 'a' }, options: { id: `key-${n}` } })),
    );
    await eventually(
      async () => (await count(`SELECT count(*) AS n FROM durable_runs WHERE id LIKE 'key-%' AND started_at IS NOT NULL`)) === 4,
    );
    await sleep(200);
    const blocked = (
      await db.query<{ id: string }>(`SELECT id FROM durable_runs WHERE id LIKE 'key-%' AND started_at IS NULL ORDER BY id LIMIT 1`)
    )[0].id;
    expect((await e.flowControl.whyNotStarted(blocked))!.reasons[0]).toMatch(
      /^rate limited until .*Z \(concurrency key [ab]: 2 starts per 1 s\)$/,
    );
    expect((await e.flowControl.keyUsage('api')).map((k) => k.rateUsed)).toEqual([2, 2]);
    await Promise.all(keyed.map((x) => x.result({ timeoutMs: 20_000 })));
    for (const k of ['a', 'b']) {
      const ks = (
        await db.query<{ t: Date }>(
          `SELECT started_at AS t FROM durable_runs WHERE id LIKE 'key-%' AND concurrency_key = ? ORDER BY started_at`,
          [k],
        )
      ).map((x) => x.t.getTime());
      for (let i = 0; i < ks.length; i++) expect(ks.filter((t) => t >= ks[i] && t < ks[i] + 1_000).length).toBeLessThanOrEqual(2);
    }
  });
});
