import { Durable, DurableEngine, WorkflowRegistry, type WorkflowHandle } from 'nestjs-durable';
import { isConnectionError } from '../../libs/durable/src/store/connection-errors.js';
import { TcpProxy } from '../chaos/tcp-proxy.js';
import { DATABASES, openDatabase, type KindDatabase } from '../support/databases.js';
import { STEADY } from '../support/engine-harness.js';

/**
 * A start made outside a caller's transaction whose connection is lost (a failover's or a restart's
 * connection, an idle one a proxy cut) is sent once more on a fresh connection: the caller gets its
 * run, started once. Inserting is idempotent by run id, so a first try that committed before its
 * reply was lost is found by the second (outcome 'existing'). An outage that outlasts the second
 * try fails the start with the connection error. The connection is cut by a proxy at the statement
 * that carries the run's id, before the server sees it or after it answered.
 */
describe.each(DATABASES)('a start that loses its connection, on %s', (kind) => {
  let db: KindDatabase;
  let proxy: TcpProxy;
  let client: DurableEngine;
  let worker: DurableEngine;
  const executions = new Map<string, number>();

  const engine = async (worker: boolean) => {
    const registry = new WorkflowRegistry();
    registry.register({
      name: 'counted',
      queue: 'default',
      options: {},
      run: async () => {
        const id = Durable.runId();
        executions.set(id, (executions.get(id) ?? 0) + 1);
        return 'done';
      },
    });
    const e = new DurableEngine({ registry, connection: proxy.url(db.url), prisma: db.prisma, options: { ...STEADY, worker } });
    await e.start();
    return e;
  };
  const rowsOf = async (ids: string[]) =>
    Number(
      (await db.query<{ n: unknown }>(`SELECT count(*) AS n FROM durable_runs WHERE id IN (${ids.map(() => '?').join(', ')})`, ids))[0].n,
    );
  const doneOnce = async (handles: WorkflowHandle[]) => {
    for (const h of handles) expect(await h.result({ timeoutMs: 20_000 })).toBe('done');
    expect(handles.map((h) => executions.get(h.id))).toEqual(handles.map(() => 1));
    expect(await rowsOf(handles.map((h) => h.id))).toBe(handles.length);
  };

  beforeAll(async () => {
    db = await openDatabase(kind, 'start_loss');
    proxy = await TcpProxy.start(db.url);
    client = await engine(false);
    worker = await engine(true);
  }, 60_000);
  afterEach(() => proxy.clearCuts());
  afterAll(async () => {
    await client?.stop();
    await worker?.stop();
    await proxy?.close();
    await db?.close();
  });

  it('start(): the statement never reached the server; sent again, the run starts once', async () => {
    const cut = proxy.cutOnce('lost-before', 'before-server');
    const h = await client.startRun('counted', null, { id: 'lost-before' });
    expect(cut.fired).toBe(true);
    expect(h.outcome).toBe('started');
    await doneOnce([h]);
  });

  it('start(): the statement committed and its answer was lost; the second try finds the run', async () => {
    const cut = proxy.cutOnce('lost-reply', 'before-reply');
    const h = await client.startRun('counted', null, { id: 'lost-reply' });
    expect(cut.fired).toBe(true);
    // Postgres commits the one statement before answering. MariaDB's start is a transaction (a look-up
    // of the ids, then the insert): the cut comes after the look-up's answer, before any commit, so the
    // second try inserts.
    expect(h.outcome).toBe(kind === 'postgres' ? 'existing' : 'started');
    await doneOnce([h]);
  });

  it('start() with a delay, and startMany(): sent again the same way', async () => {
    const cuts = [proxy.cutOnce('lost-delayed', 'before-server')];
    const delayed = await client.startRun('counted', null, { id: 'lost-delayed', delayMs: 100 });
    cuts.push(proxy.cutOnce('lost-many-2', 'before-server'));
    const many = await client.startMany([0, 1, 2].map((i) => ({ workflow: 'counted', input: null, options: { id: `lost-many-${i}` } })));
    expect(cuts.map((c) => c.fired)).toEqual([true, true]);
    await doneOnce([delayed, ...many]);
  });

  it("start() in a worker's process (the run inserted already claimed): sent again, it runs at once", async () => {
    const cut = proxy.cutOnce('lost-claimed', 'before-server');
    const h = await worker.startRun('counted', null, { id: 'lost-claimed' });
    expect(cut.fired).toBe(true);
    expect(h.outcome).toBe('started');
    await doneOnce([h]);
  });

  it('an outage that outlasts the second try: start() fails with the connection error (Postgres), or waits for a connection (MariaDB)', async () => {
    const outage = proxy.outage(1_500);
    const started = client.startRun('counted', null, { id: 'in-outage' }).then(
      (handle) => ({ handle, at: Date.now() }),
      (error: unknown) => ({ error }),
    );
    await outage;
    const ended = Date.now();
    const r = await started;
    if (kind === 'postgres') {
      expect('error' in r && isConnectionError(r.error)).toBe(true);
      expect(await rowsOf(['in-outage'])).toBe(0);
    } else {
      // The mariadb driver's pool waits for a connection (acquireTimeout, 10 s by default) instead of failing.
      if (!('handle' in r)) throw r.error;
      expect(r.at).toBeGreaterThanOrEqual(ended - 50);
      await doneOnce([r.handle]);
    }
  });
});
