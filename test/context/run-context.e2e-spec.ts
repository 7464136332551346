import { AsyncLocalStorage } from 'node:async_hooks';
import { Durable, DurableEngine, InvalidArgumentError, WorkflowRegistry, type EngineOptions } from 'nestjs-durable';
import { AdminService } from '../../libs/durable/src/admin/admin-service.js';
import { formatRun } from '../../libs/durable/src/cli/runs-format.js';
import { eventually, FAST, STEADY } from '../support/engine-harness.js';
import { DATABASES, openDatabase, type KindDatabase } from '../support/databases.js';

/**
 * The engine option `context`: what `capture()` returns in the caller's async context at start() is
 * kept with the run, given back by Durable.context() in the workflow and its steps, and restored
 * (`restore`) around every execution — on any engine, after a crash, and in child runs.
 */
interface Tenant {
  tenantId: string;
  user?: string;
}

describe.each(DATABASES)('the run context on %s', (kind) => {
  const requestContext = new AsyncLocalStorage<Tenant>();
  let db: KindDatabase;
  let engines: DurableEngine[] = [];
  /** What each run's workflow and steps saw, by run id. */
  const seen = new Map<string, Array<{ where: string; durable: unknown; restored: unknown }>>();
  const release = new Map<string, () => void>();

  const note = (where: string) => {
    const id = Durable.runId();
    const list = seen.get(id) ?? [];
    list.push({ where, durable: Durable.context(), restored: requestContext.getStore() ?? null });
    seen.set(id, list);
  };

  function registry(): WorkflowRegistry {
    const r = new WorkflowRegistry();
    r.register({
      name: 'invoice',
      queue: 'invoices',
      options: {},
      run: async (input: unknown) => {
        note('workflow');
        await Durable.step('load', () => note('step'));
        const child = await Durable.startChild<string>('mail', {});
        // The first execution of a run started with hold waits here (until its engine stops).
        if ((input as { hold?: boolean } | null)?.hold && !release.has(Durable.runId()))
          await new Promise<void>((r) => release.set(Durable.runId(), r));
        await Durable.step('after-hold', () => note('after-hold'));
        return child.result();
      },
    });
    r.register({
      name: 'mail',
      queue: 'invoices',
      options: {},
      run: async () => {
        note('child');
        return 'sent';
      },
    });
    return r;
  }

  const context: EngineOptions['context'] = {
    capture: () => requestContext.getStore(),
    restore: (ctx, run) => requestContext.run(ctx as Tenant, run),
  };

  async function startEngine(options: EngineOptions = {}): Promise<DurableEngine> {
    const engine = new DurableEngine({
      registry: registry(),
      connection: db.url,
      prisma: db.prisma,
      options: { ...STEADY, context, ...options },
    });
    await engine.start();
    engines.push(engine);
    return engine;
  }

  beforeAll(async () => {
    db = await openDatabase(kind, `run_context_${kind}`);
  });
  afterEach(async () => {
    for (const r of release.values()) r();
    await Promise.all(engines.map((e) => e.stop()));
    engines = [];
  });
  afterAll(async () => {
    await db.close();
  });

  it('a run started inside a request keeps its context: workflow, steps and child see it, restored', async () => {
    const engine = await startEngine();
    const handle = await requestContext.run({ tenantId: 'acme', user: 'ada' }, () => engine.startRun('invoice', {}));
    await expect(handle.result({ timeoutMs: 15_000 })).resolves.toBe('sent');

    const expected = { durable: { tenantId: 'acme', user: 'ada' }, restored: { tenantId: 'acme', user: 'ada' } };
    expect(seen.get(handle.id)).toEqual([
      { where: 'workflow', ...expected },
      { where: 'step', ...expected },
      { where: 'after-hold', ...expected },
    ]);
    const child = [...seen.keys()].find((id) => id.startsWith(`${handle.id}:child:`));
    expect(child && seen.get(child)).toEqual([{ where: 'child', ...expected }]);
    expect((await engine.getRun(child!))?.context).toEqual({ tenantId: 'acme', user: 'ada' });
    expect((await engine.getRun(handle.id))?.context).toEqual({ tenantId: 'acme', user: 'ada' });
    expect((await engine.exportRun(handle.id))?.run.context).toEqual({ tenantId: 'acme', user: 'ada' });
    // Where an operator looks: the admin API's run detail (the dashboard shows it) and `runs show`.
    const detail = await new AdminService(() => engine).runs.get(handle.id);
    expect((detail as Record<string, unknown>).context).toEqual({ tenantId: 'acme', user: 'ada' });
    expect(formatRun(detail as unknown as Parameters<typeof formatRun>[0])).toMatch(
      /\ncontext \{("tenantId":"acme","user":"ada"|"user":"ada","tenantId":"acme")\}\n/,
    );
  });

  it('a run started outside any request has no context; the start option context gives one explicitly', async () => {
    const engine = await startEngine();
    const none = await engine.startRun('invoice', {});
    await none.result({ timeoutMs: 15_000 });
    expect(seen.get(none.id)?.[0]).toEqual({ where: 'workflow', durable: undefined, restored: null });
    expect((await engine.getRun(none.id))?.context).toBeUndefined();

    const given = await requestContext.run({ tenantId: 'ignored' }, () =>
      engine.startRun('invoice', {}, { context: { tenantId: 'globex', since: new Date('2026-01-02T03:04:05Z') } }),
    );
    await given.result({ timeoutMs: 15_000 });
    // Values the codec stores come back as they were (a Date stays a Date).
    expect(seen.get(given.id)?.[1]).toEqual({
      where: 'step',
      durable: { tenantId: 'globex', since: new Date('2026-01-02T03:04:05Z') },
      restored: { tenantId: 'globex', since: new Date('2026-01-02T03:04:05Z') },
    });
  });

  it('startMany captures the context of its caller for every run', async () => {
    const engine = await startEngine();
    const handles = await requestContext.run({ tenantId: 'initech' }, () =>
      engine.startMany([
        { workflow: 'invoice', input: {} },
        { workflow: 'invoice', input: {}, options: { context: { tenantId: 'umbrella' } } },
      ]),
    );
    await Promise.all(handles.map((h) => h.result({ timeoutMs: 15_000 })));
    expect(seen.get(handles[0].id)?.[0].durable).toEqual({ tenantId: 'initech' });
    expect(seen.get(handles[1].id)?.[0].durable).toEqual({ tenantId: 'umbrella' });
  });

  it('a run taken over by another engine is restored there with its context', async () => {
    const first = await startEngine();
    const handle = await requestContext.run({ tenantId: 'acme' }, () => first.startRun('invoice', { hold: true }));
    await eventually(async () => release.has(handle.id), 15_000, 'the run to hold');
    // The first engine shuts down with the run in flight; the second one replays it from its checkpoints.
    await first.stop();
    const second = await startEngine({ workerId: 'second' });
    await eventually(async () => (await second.getRun(handle.id))?.status === 'SUCCEEDED', 20_000, 'the run to end on the second engine');
    const executions = seen.get(handle.id)!;
    expect(executions.filter((s) => s.where === 'workflow')).toHaveLength(2);
    expect(executions.map((s) => s.where)).toEqual(['workflow', 'step', 'workflow', 'after-hold']);
    for (const s of executions) expect(s).toMatchObject({ durable: { tenantId: 'acme' }, restored: { tenantId: 'acme' } });
    const events = await second.getRunEvents(handle.id);
    expect(events.some((e) => e.kind === 'claimed' && (e.detail as { worker?: string }).worker === 'second')).toBe(true);
  });

  it('a restore that does not return what run() returns still holds the run until its execution ends', async () => {
    const engine = await startEngine({
      context: {
        capture: context!.capture,
        restore: (ctx, run) => {
          void requestContext.run(ctx as Tenant, run);
          return Promise.resolve(undefined);
        },
      },
    });
    const handle = await requestContext.run({ tenantId: 'acme' }, () => engine.startRun('invoice', {}));
    await expect(handle.result({ timeoutMs: 15_000 })).resolves.toBe('sent');
    const events = await engine.getRunEvents(handle.id);
    expect(events.filter((e) => e.kind === 'claimed')).toHaveLength(1);
    expect(events.some((e) => e.kind === 'lease_expired')).toBe(false);
  });

  it('with required, a start without a context is refused and writes nothing', async () => {
    const engine = await startEngine({ context: { ...context, required: true } });
    const before = await db.query<{ n: number | bigint }>('SELECT count(*) AS n FROM durable_runs');
    const err = await engine.startRun('invoice', {}, { id: 'no-tenant' }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(InvalidArgumentError);
    expect((err as Error).message).toMatch(/cannot start without a context .*pass the start option \{ context \}/);
    expect(await db.query('SELECT id FROM durable_runs WHERE id = ?', ['no-tenant'])).toEqual([]);
    const after = await db.query<{ n: number | bigint }>('SELECT count(*) AS n FROM durable_runs');
    expect(Number(after[0].n)).toBe(Number(before[0].n));
    // With one, it starts.
    const ok = await requestContext.run({ tenantId: 'acme' }, () => engine.startRun('invoice', {}));
    await expect(ok.result({ timeoutMs: 15_000 })).resolves.toBe('sent');
  });

  it('a context the codec cannot store, or one too large, is refused at start', async () => {
    const engine = await startEngine();
    const fn = await engine.startRun('invoice', {}, { context: { tenantId: () => 'x' } }).catch((e: unknown) => e);
    expect(fn).toMatchObject({ code: 'SERIALIZATION' });
    const big = await engine.startRun('invoice', {}, { context: { blob: 'x'.repeat(20_000) } }).catch((e: unknown) => e);
    expect(big).toMatchObject({ code: 'PAYLOAD_TOO_LARGE' });
    const throwing = new DurableEngine({
      registry: registry(),
      connection: db.url,
      options: {
        ...FAST,
        worker: false,
        context: {
          capture: () => {
            throw new Error('no request scope');
          },
        },
      },
    });
    await throwing.start();
    engines.push(throwing);
    const err = await throwing.startRun('invoice', {}).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(InvalidArgumentError);
    expect((err as Error).message).toContain('capture() threw while starting "invoice": no request scope');
  });

  it('context.settings on MariaDB is refused when the engine is made (no row-level security there)', () => {
    const make = () =>
      new DurableEngine({ registry: registry(), connection: db.url, options: { context: { settings: () => ({ 'app.tenant_id': 'x' }) } } });
    if (kind === 'mariadb') expect(make).toThrow(/context\.settings .* needs PostgreSQL/);
    else expect(make).not.toThrow();
  });
});
