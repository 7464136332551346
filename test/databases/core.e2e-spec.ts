import { Durable, DurableEngine, Step, WorkflowRegistry, type EngineOptions, type WorkflowOptions } from 'nestjs-durable';
import { eventually, FAST, sleep, STEADY } from '../support/engine-harness.js';
import { DATABASES, openDatabase, type KindDatabase } from '../support/databases.js';

type Fn = (input: any) => Promise<unknown>;

/** Steps that leave a trace in the database: each execution is counted, the ledger write is transactional. */
class Ledger {
  constructor(private readonly db: () => KindDatabase) {}
  attempts = new Map<string, number>();

  @Step() async count(runId: string, name: string) {
    await this.db().query('INSERT INTO test_step_executions (run_id, step) VALUES (?, ?)', [runId, name]);
    return name;
  }

  @Step({ transactional: true })
  async book(runId: string, amount: number) {
    const tx = Durable.tx<any>();
    await tx.$executeRawUnsafe(this.db().sql('INSERT INTO test_ledger (run_id, step, amount) VALUES (?, ?, ?)'), runId, 'book', amount);
    return amount;
  }

  @Step({ retries: { maxAttempts: 3, initialDelayMs: 20 } })
  async flaky(key: string) {
    const n = (this.attempts.get(key) ?? 0) + 1;
    this.attempts.set(key, n);
    if (n < 3) throw new Error(`attempt ${n} fails`);
    return n;
  }

  @Step({ compensate: 'unbook' })
  async reserve(runId: string) {
    await this.db().query('INSERT INTO test_ledger (run_id, step, amount) VALUES (?, ?, ?)', [runId, 'reserve', 1]);
    return 'reserved';
  }

  @Step()
  async unbook(runId: string) {
    await this.db().query('INSERT INTO test_ledger (run_id, step, amount) VALUES (?, ?, ?)', [runId, 'unbook', -1]);
  }
}

/**
 * The engine's core on every database it supports: the same workflows, the same assertions. What
 * a database does differently (wake-ups without LISTEN on MariaDB) shows in timings, never in results.
 */
describe.each(DATABASES)('the engine core on %s', (kind) => {
  let db: KindDatabase;
  const engines: DurableEngine[] = [];
  const ledger = new Ledger(() => db);
  let failNext = true;
  /** Executions of forkable's first step: a fork from step 1 replays it from the copy, never runs it again. */
  let forkableA = 0;

  const workflows: Record<string, Fn | [Fn, WorkflowOptions]> = {
    three: async (input: { x: number }) => {
      const a = await Durable.step('a', async () => input.x + 1);
      const b = await Durable.step('b', async () => a * 2);
      const c = await Durable.step('c', async () => ({ b, at: new Date('2026-01-02T03:04:05.678Z'), big: 10n ** 20n }));
      return c;
    },
    counted: async (input: { id: string; ms?: number }) => {
      await ledger.count(input.id, 'first');
      if (input.ms) await Durable.step('hold', () => sleep(input.ms!));
      await ledger.count(input.id, 'second');
      return 'done';
    },
    booking: async (input: { id: string }) => ledger.book(input.id, 7),
    retrying: async (input: { key: string }) => ledger.flaky(input.key),
    sleeper: async () => {
      const before = await Durable.now();
      await Durable.sleep(1_200); // past inMemoryWaitMaxMs: the run suspends and is claimed again
      return (await Durable.now()) - before;
    },
    receiver: async () => {
      const first = await Durable.recv<string>('go', { timeoutMs: 30_000 });
      const none = await Durable.recv<string>('never', { timeoutMs: 300 });
      await Durable.setEvent('state', { got: first });
      return { first, none };
    },
    parent: async (input: { n: number }) => {
      const handles = await Promise.all(Array.from({ length: input.n }, (_, i) => Durable.startChild('child', { i })));
      const results = await Promise.all(handles.map((c) => c.result()));
      return results;
    },
    child: async (input: { i: number }) => Durable.step('square', async () => input.i * input.i),
    failing: async () => {
      await Durable.step('ok', async () => 1);
      await Durable.step(
        'bad',
        async () => {
          if (failNext) throw new Error('not yet');
          return 2;
        },
        { retries: { maxAttempts: 1 } },
      );
      return 'recovered';
    },
    compensating: async (input: { id: string }) => {
      await ledger.reserve(input.id);
      await Durable.recv('never-sent');
      return 'unreachable';
    },
    forkable: async () => {
      const a = await Durable.step('a', async () => (forkableA++, Math.random()));
      const b = await Durable.step('b', async () => a + 1);
      return { a, b };
    },
  };

  async function engine(options: EngineOptions = {}, start = true): Promise<DurableEngine> {
    const registry = new WorkflowRegistry();
    for (const [name, w] of Object.entries(workflows)) {
      const [run, opts] = Array.isArray(w) ? w : [w, {}];
      registry.register({ name, queue: opts.queue ?? 'default', options: opts, run });
    }
    const e = new DurableEngine({
      registry,
      connection: db.url,
      prisma: db.prisma,
      options: { ...STEADY, inMemoryWaitMaxMs: 500, ...options },
    });
    engines.push(e);
    if (start) await e.start();
    return e;
  }

  const executions = async (runId: string, step: string) =>
    Number(
      (await db.query<{ n: unknown }>('SELECT count(*) AS n FROM test_step_executions WHERE run_id = ? AND step = ?', [runId, step]))[0].n,
    );

  beforeAll(async () => {
    db = await openDatabase(kind, `core_${kind}`);
  });
  // Each test's engines stop after it: a later test counts on its own workers alone.
  afterEach(async () => {
    for (const e of engines.splice(0)) await e.stop().catch(() => {});
  });
  afterAll(() => db.close());

  it('runs a workflow to its end, values kept losslessly, with its steps and history', async () => {
    const e = await engine();
    const h = await e.startRun<{ b: number; at: Date; big: bigint }>('three', { x: 1 });
    const out = await h.result({ timeoutMs: 10_000 });
    expect(out).toEqual({ b: 4, at: new Date('2026-01-02T03:04:05.678Z'), big: 10n ** 20n });
    const run = await e.getRun(h.id);
    expect(run?.status).toBe('SUCCEEDED');
    expect(run?.steps.map((s) => [s.seq, s.name, s.status])).toEqual([
      [0, 'a', 'SUCCEEDED'],
      [1, 'b', 'SUCCEEDED'],
      [2, 'c', 'SUCCEEDED'],
    ]);
    expect(run?.leaseEpoch).toBe(1);
    expect(run!.finishedAt!.getTime()).toBeGreaterThanOrEqual(run!.createdAt.getTime());
    expect(Math.abs(run!.createdAt.getTime() - Date.now())).toBeLessThan(60_000); // stored in UTC, read back as UTC
    expect((await e.getRunEvents(h.id)).map((x) => x.kind)).toEqual(['created', 'claimed', 'completed']);
  });

  it('starts a run inside the app transaction: it exists if and only if the transaction commits', async () => {
    const e = await engine();
    const committed = await db.prisma.$transaction(async (tx: any) => {
      await tx.$executeRawUnsafe(db.sql('INSERT INTO test_ledger (run_id, step, amount) VALUES (?, ?, ?)'), 'order-1', 'placed', 1);
      return e.startRun('three', { x: 2 }, { tx, id: 'in-tx-commit' });
    });
    await expect(committed.result({ timeoutMs: 10_000 })).resolves.toMatchObject({ b: 6 });
    await expect(
      db.prisma.$transaction(async (tx: any) => {
        await tx.$executeRawUnsafe(db.sql('INSERT INTO test_ledger (run_id, step, amount) VALUES (?, ?, ?)'), 'order-2', 'placed', 1);
        await e.startRun('three', { x: 3 }, { tx, id: 'in-tx-rollback' });
        throw new Error('the business write fails');
      }),
    ).rejects.toThrow('the business write fails');
    expect(await e.getRun('in-tx-rollback')).toBeNull();
    expect(await db.query("SELECT run_id FROM test_ledger WHERE step = 'placed' ORDER BY run_id")).toEqual([{ run_id: 'order-1' }]);
  });

  it('treats a repeated id as the same run (idempotent start, startMany), case-sensitively', async () => {
    const e = await engine();
    const a = await e.startRun('three', { x: 1 }, { id: 'same-id' });
    const b = await e.startRun('three', { x: 1 }, { id: 'same-id' });
    expect(b.id).toBe(a.id);
    const c = await e.startRun('three', { x: 1 }, { id: 'SAME-ID' });
    await c.result({ timeoutMs: 10_000 });
    const many = await e.startMany([
      { workflow: 'three', input: { x: 1 }, options: { id: 'same-id' } },
      { workflow: 'three', input: { x: 5 }, options: { id: 'many-1' } },
      { workflow: 'three', input: { x: 6 }, options: { id: 'many-2' } },
    ]);
    expect(many.map((h) => h.id)).toEqual(['same-id', 'many-1', 'many-2']);
    await expect(many[2].result({ timeoutMs: 10_000 })).resolves.toMatchObject({ b: 14 });
    const rows = await db.query<{ id: string }>(
      "SELECT id FROM durable_runs WHERE id IN ('same-id', 'SAME-ID', 'many-1', 'many-2') ORDER BY id",
    );
    expect(rows.map((r) => r.id).sort()).toEqual(['SAME-ID', 'many-1', 'many-2', 'same-id'].sort());
  });

  it('starts one run for two concurrent starts of one id in two app transactions', async () => {
    const e = await engine();
    const first = db.prisma.$transaction(async (tx: any) => {
      const h = await e.startRun('three', { x: 1 }, { tx, id: 'raced' });
      await sleep(300); // the second start meets this one's uncommitted row
      return h;
    });
    await sleep(50);
    const second = db.prisma.$transaction(async (tx: any) => e.startRun('three', { x: 1 }, { tx, id: 'raced' }));
    const [a, b] = await Promise.all([first, second]);
    expect([a.id, b.id]).toEqual(['raced', 'raced']);
    await a.result({ timeoutMs: 10_000 });
    expect(await db.query("SELECT id FROM durable_runs WHERE id = 'raced'")).toHaveLength(1);
    expect((await e.getRunEvents('raced')).filter((x) => x.kind === 'created')).toHaveLength(1);
  });

  it('commits a transactional step with its checkpoint: the business row exists once', async () => {
    const e = await engine();
    const h = await e.startRun('booking', { id: 'book-1' });
    expect(await h.result({ timeoutMs: 10_000 })).toBe(7);
    expect(await db.query("SELECT amount FROM test_ledger WHERE run_id = 'book-1' AND step = 'book'")).toEqual([{ amount: 7 }]);
  });

  it('retries a failing step with back-off until it succeeds', async () => {
    const e = await engine();
    const h = await e.startRun('retrying', { key: 'r1' });
    expect(await h.result({ timeoutMs: 10_000 })).toBe(3);
    // A retry's history row is written without waiting for it (run-history.ts): it may land after the result.
    const retried = async () => (await e.getRunEvents(h.id)).filter((x) => x.kind === 'step_retried');
    await eventually(async () => (await retried()).length >= 2, 5_000, 'two step_retried events');
    expect(await retried()).toHaveLength(2);
  });

  it('spreads runs over several workers: each run claimed and executed once', async () => {
    const client = await engine({ worker: false });
    const workers = [await engine({ concurrency: 4 }), await engine({ concurrency: 4 })];
    const handles = await client.startMany(
      Array.from({ length: 30 }, (_, i) => ({ workflow: 'counted', input: { id: `spread-${i}` }, options: { id: `spread-${i}` } })),
    );
    for (const h of handles) await h.result({ timeoutMs: 20_000 });
    for (let i = 0; i < 30; i++) expect(await executions(`spread-${i}`, 'first')).toBe(1);
    const owners = await db.query<{ worker: string }>(
      "SELECT DISTINCT JSON_VALUE(detail, '$.worker') AS worker FROM durable_run_events WHERE kind = 'claimed' AND run_id LIKE 'spread-%'".replace(
        "JSON_VALUE(detail, '$.worker')",
        kind === 'postgres' ? "detail ->> 'worker'" : "JSON_VALUE(detail, '$.worker')",
      ),
    );
    expect(owners.length).toBeGreaterThanOrEqual(1);
    expect(owners.every((o) => workers.some((w) => w.options.workerId === o.worker))).toBe(true);
  });

  it('hands an expired lease to another worker and fences the old execution out', async () => {
    const slow = await engine({ leaseMs: 60_000, heartbeatMs: 30_000 });
    const h = await slow.startRun('counted', { id: 'fenced', ms: 1_500 }, { id: 'fenced' });
    await eventually(async () => (await executions('fenced', 'first')) === 1, 10_000, 'the first step');
    // The worker "freezes": its lease runs out while its step still runs.
    await db.query("UPDATE durable_runs SET lease_expires_at = '2000-01-01 00:00:00' WHERE id = 'fenced'");
    await engine();
    expect(await h.result({ timeoutMs: 20_000 })).toBe('done');
    const run = await slow.getRun('fenced');
    expect(run?.leaseEpoch).toBe(2);
    expect(await executions('fenced', 'second')).toBe(1); // the frozen execution's later step never ran or never counted
    const kinds = (await slow.getRunEvents('fenced')).map((x) => x.kind);
    expect(kinds).toContain('lease_expired');
  });

  it('sleeps durably: the run suspends, then a claim wakes it', async () => {
    const e = await engine();
    const h = await e.startRun<number>('sleeper', {});
    await eventually(async () => (await e.getRun(h.id))?.status === 'WAITING', 10_000, 'the run to suspend');
    expect(await h.result({ timeoutMs: 10_000 })).toBeGreaterThanOrEqual(1_200);
    expect((await e.getRunEvents(h.id)).map((x) => x.kind)).toEqual(expect.arrayContaining(['suspended', 'woken', 'completed']));
  });

  it('delivers a message once (idempotency key), times out a recv, publishes an event', async () => {
    const e = await engine();
    const h = await e.startRun('receiver', {});
    await eventually(async () => (await e.getRun(h.id))?.status === 'WAITING', 10_000, 'the run to wait');
    await e.send(h.id, 'go', 'hello', { idempotencyKey: 'k1' });
    await e.send(h.id, 'go', 'hello again', { idempotencyKey: 'k1' });
    expect(await h.result({ timeoutMs: 15_000 })).toEqual({ first: 'hello', none: null });
    expect(await db.query('SELECT count(*) AS n FROM durable_messages WHERE run_id = ?', [h.id])).toEqual([
      { n: kind === 'postgres' ? '1' : 1n },
    ]);
    expect(await e.getEvent(h.id, 'state')).toEqual({ got: 'hello' });
  });

  it('starts children and joins their results', async () => {
    const e = await engine({ concurrency: 8 });
    const h = await e.startRun<number[]>('parent', { n: 5 });
    expect(await h.result({ timeoutMs: 20_000 })).toEqual([0, 1, 4, 9, 16]);
    const children = await db.query<{ n: unknown }>('SELECT count(*) AS n FROM durable_runs WHERE parent_id = ?', [h.id]);
    expect(Number(children[0].n)).toBe(5);
  });

  it('cancels a waiting run, and cancels with compensation: the undo runs, then the run ends CANCELLED', async () => {
    const e = await engine();
    const plain = await e.startRun('receiver', {});
    await eventually(async () => (await e.getRun(plain.id))?.status === 'WAITING', 10_000, 'the run to wait');
    await e.cancel(plain.id);
    expect((await e.getRun(plain.id))?.status).toBe('CANCELLED');

    const h = await e.startRun('compensating', { id: 'comp-1' });
    await eventually(async () => (await e.getRun(h.id))?.status === 'WAITING', 10_000, 'the run to wait');
    await e.cancel(h.id, { compensate: true });
    await eventually(async () => (await e.getRun(h.id))?.status === 'CANCELLED', 15_000, 'the compensation');
    const rows = await db.query<{ step: string; amount: number }>(
      "SELECT step, amount FROM test_ledger WHERE run_id = 'comp-1' ORDER BY at, step",
    );
    expect(rows.map((r) => [r.step, Number(r.amount)])).toEqual([
      ['reserve', 1],
      ['unbook', -1],
    ]);
  });

  it('resumes a failed run from its last checkpoint, and forks a run from a step', async () => {
    const e = await engine();
    failNext = true;
    const h = await e.startRun('failing', {});
    await expect(h.result({ timeoutMs: 10_000 })).rejects.toThrow('not yet');
    failNext = false;
    await e.resume(h.id);
    expect(await h.result({ timeoutMs: 10_000 })).toBe('recovered');
    expect((await e.getRun(h.id))?.steps.map((s) => s.name)).toEqual(['ok', 'bad']);

    const src = await e.startRun<{ a: number; b: number }>('forkable', {});
    const first = await src.result({ timeoutMs: 10_000 });
    expect(forkableA).toBe(1);
    const fork = await e.fork(src.id, 1);
    const again = await e.handle<{ a: number; b: number }>(fork.id).result({ timeoutMs: 10_000 });
    expect(again.a).toBe(first.a); // step 0 replayed from the copy…
    expect(forkableA).toBe(1); // …and not executed again (its first claim found the copied steps)
    expect(again.b).toBe(first.a + 1);
    expect((await e.getRunEvents(fork.id)).map((x) => x.kind)[0]).toBe('forked');
  });

  it("runs through the app's Prisma client alone (no connection URL of its own)", async () => {
    const registry = new WorkflowRegistry();
    for (const name of ['three', 'parent', 'child']) {
      const w = workflows[name];
      registry.register({ name, queue: 'default', options: {}, run: Array.isArray(w) ? w[0] : w });
    }
    const e = new DurableEngine({ registry, prisma: db.prisma, options: { ...FAST, inMemoryWaitMaxMs: 500 } });
    engines.push(e);
    await e.start();
    expect(await e.startRun('three', { x: 4 }).then((h) => h.result({ timeoutMs: 10_000 }))).toMatchObject({ b: 10 });
    expect(await e.startRun('parent', { n: 3 }).then((h) => h.result({ timeoutMs: 10_000 }))).toEqual([0, 1, 4]);
  });

  it('fails a run past its deadline, and deletes finished runs past the retention', async () => {
    const e = await engine({ retentionMs: 1_000 });
    const late = await e.startRun('sleeper', {}, { timeoutMs: 300 });
    await expect(late.result({ timeoutMs: 10_000 })).rejects.toThrow(/exceeded its deadline/);
    expect((await e.getRunEvents(late.id)).map((x) => x.kind)).toContain('failed');
    const kept = await e.startRun('three', { x: 1 });
    await kept.result({ timeoutMs: 10_000 });
    await eventually(async () => (await e.getRun(kept.id)) === null && (await e.getRun(late.id)) === null, 15_000, 'retention');
    expect(await db.query('SELECT run_id FROM durable_run_events WHERE run_id IN (?, ?)', [kept.id, late.id])).toEqual([]);
  });

  it('delivers lifecycle events to a hook after commit, in history order', async () => {
    const e = await engine({ hooks: { pollIntervalMs: 50, settleMs: 50 } }, false);
    const seen: Array<{ type: string; runId: string; workflowName: string | null }> = [];
    e.onEvent(['run.succeeded', 'run.failed'], (ev) => void seen.push({ type: ev.type, runId: ev.runId, workflowName: ev.workflowName }), {
      consumer: 'ends',
    });
    await e.start();
    failNext = true;
    const ok = await e.startRun('three', { x: 1 });
    const bad = await e.startRun('failing', {});
    await ok.result({ timeoutMs: 10_000 });
    await bad.result({ timeoutMs: 10_000 }).catch(() => undefined);
    await eventually(async () => seen.length >= 2, 10_000, 'the hook');
    expect(seen).toEqual(
      expect.arrayContaining([
        { type: 'run.succeeded', runId: ok.id, workflowName: 'three' },
        { type: 'run.failed', runId: bad.id, workflowName: 'failing' },
      ]),
    );
    // The cursor moves after the handler returns: wait for that write, then check where it stands.
    await eventually(async () => (await e.hookCursors())[0]?.behind === 0, 10_000, 'the cursor past the delivered events');
    const [cursor] = await e.hookCursors();
    expect(cursor).toMatchObject({ consumer: 'ends', owner: e.options.workerId, behind: 0 });
  });

  it('hands its runs back at a graceful stop: another instance finishes them', async () => {
    const first = await engine({ shutdownGraceMs: 50 });
    const h = await first.startRun('counted', { id: 'handed', ms: 1_000 }, { id: 'handed' });
    await eventually(async () => (await executions('handed', 'first')) === 1, 10_000, 'the first step');
    await first.stop();
    const second = await engine();
    expect(await second.handle(h.id).result({ timeoutMs: 15_000 })).toBe('done');
    expect((await second.getRunEvents(h.id)).map((x) => x.kind)).toContain('released');
  });
});
