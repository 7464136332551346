import { Injectable, UnauthorizedException, type CanActivate, type ExecutionContext, type INestApplication } from '@nestjs/common';
import { Durable, NonRetryableError, Workflow, WorkflowClient } from 'nestjs-durable';
import request from 'supertest';
import { runRunsCommand } from '../../libs/durable/src/cli/runs-command.js';
import { eventually } from '../support/engine-harness.js';
import { DATABASES, durableApp, type KindDatabase, openDatabase } from '../support/databases.js';

const TOKEN = 'admin-token-for-the-tests';

@Injectable()
class TokenGuard implements CanActivate {
  canActivate(ctx: ExecutionContext): boolean {
    if (ctx.switchToHttp().getRequest().headers.authorization !== `Bearer ${TOKEN}`) throw new UnauthorizedException();
    return true;
  }
}

/** Released by the progress test: the step reports its progress, then waits for it. */
let releaseCrunch: () => void = () => {};

@Injectable()
class Jobs {
  @Workflow({ name: 'crunch' })
  async crunch() {
    return Durable.step('crunch', async () => {
      Durable.progress({ done: 3, total: 10 });
      await new Promise<void>((r) => (releaseCrunch = r));
      return 'crunched';
    });
  }

  @Workflow({ name: 'ok' })
  async ok(input: { n: number }) {
    await Durable.step('one', async () => input.n);
    return Durable.step('two', async () => ({ doubled: input.n * 2 }));
  }

  @Workflow({ name: 'bad' })
  async bad() {
    await Durable.step('fails', async () => {
      throw new NonRetryableError('seeded failure');
    });
  }

  @Workflow({ name: 'waiter' })
  async waiter() {
    return Durable.recv<string>('go', { timeoutMs: 600_000 });
  }
}

/**
 * The admin API on every database: the runs list with its filters, counts and cursor, one run in
 * detail, cancel and resume, statistics, charts, versions, hooks and "why not started" — the same
 * requests and the same answers on PostgreSQL and MariaDB.
 */
describe.each(DATABASES)('the admin API on %s', (kind) => {
  let db: KindDatabase;
  let app: INestApplication;
  let client: WorkflowClient;
  const get = (path: string) => request(app.getHttpServer()).get(`/durable/${path}`).set('authorization', `Bearer ${TOKEN}`);
  const post = (path: string, body?: object) =>
    request(app.getHttpServer()).post(`/durable/${path}`).set('authorization', `Bearer ${TOKEN}`).send(body);

  beforeAll(async () => {
    db = await openDatabase(kind, `admin_${kind}`);
    app = await durableApp(db, [Jobs], { admin: { guards: [TokenGuard] } });
    client = app.get(WorkflowClient);
    for (let i = 0; i < 12; i++)
      await client.start('ok', { n: i }, { id: `A-${String(i).padStart(3, '0')}`, tags: i % 3 === 0 ? ['vip'] : [] });
    for (let i = 0; i < 3; i++) await client.start('bad', {}, { id: `B-${i}` });
    await client.start('waiter', {}, { id: 'W-1' });
    let counts: unknown;
    await eventually(
      async () => {
        counts = (await get('runs?limit=200').expect(200)).body.counts;
        return JSON.stringify(counts) === JSON.stringify({ PENDING: 0, RUNNING: 0, WAITING: 1, SUCCEEDED: 12, FAILED: 3, CANCELLED: 0 });
      },
      15_000,
      'the seeded runs',
    ).catch((err: Error) => {
      throw new Error(`${err.message}: counts ${JSON.stringify(counts)}`);
    });
  });
  afterAll(async () => {
    await app?.close();
    await db?.close();
  });

  it("refuses a request without the guard's token", async () => {
    await request(app.getHttpServer()).get('/durable/runs').expect(401);
  });

  it('lists runs newest first with counts, filters and a cursor that walks every page once', async () => {
    const all = await get('runs?limit=200').expect(200);
    expect(all.body.counts).toEqual({ PENDING: 0, RUNNING: 0, WAITING: 1, SUCCEEDED: 12, FAILED: 3, CANCELLED: 0 });
    expect(all.body.total).toBe(16);
    const failed = await get('runs?status=FAILED').expect(200);
    expect(failed.body.items.map((r: { id: string }) => r.id).sort()).toEqual(['B-0', 'B-1', 'B-2']);
    expect(failed.body.items[0].errorMessage).toBe('seeded failure');
    expect((await get('runs?workflow=ok&limit=200').expect(200)).body.items).toHaveLength(12);
    expect((await get('runs?idPrefix=A-00&limit=200').expect(200)).body.items).toHaveLength(10);
    const vip = await get('runs?tag=vip&limit=200').expect(200);
    expect(vip.body.items.map((r: { id: string }) => r.id).sort()).toEqual(['A-000', 'A-003', 'A-006', 'A-009']);
    expect(vip.body.items[0].tags).toEqual(['vip']);
    const ok = (await get('runs?idPrefix=A-001').expect(200)).body.items[0];
    expect(ok).toMatchObject({ id: 'A-001', status: 'SUCCEEDED', stepCount: 2 });
    expect(JSON.parse(ok.outputSummary)).toEqual({ doubled: 2 });
    const waiting = (await get('runs?status=WAITING').expect(200)).body.items[0];
    expect(waiting.waits).toEqual([{ seq: 0, kind: 'recv', key: 'go' }]);

    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const page: request.Response = await get(`runs?workflow=ok&limit=5${cursor ? `&cursor=${cursor}` : ''}`).expect(200);
      seen.push(...page.body.items.map((r: { id: string }) => r.id));
      cursor = page.body.nextCursor;
    } while (cursor);
    expect(seen).toHaveLength(12);
    expect(new Set(seen).size).toBe(12);
  });

  it('shows one run with its steps and history; cancels and resumes it', async () => {
    const detail = await get('runs/A-002').expect(200);
    expect(detail.body).toMatchObject({ id: 'A-002', status: 'SUCCEEDED', input: { n: 2 }, output: { doubled: 4 } });
    expect(detail.body.steps.map((s: { name: string; status: string }) => `${s.name}:${s.status}`)).toEqual([
      'one:SUCCEEDED',
      'two:SUCCEEDED',
    ]);
    expect(detail.body.history.map((h: { kind: string }) => h.kind)).toEqual(['created', 'claimed', 'completed']);
    expect(detail.body.totals).toMatchObject({ steps: 2, history: 3, messages: 0, children: 0 });
    await get('runs/no-such-run').expect(404);

    await post('runs/W-1/cancel').expect(200);
    expect((await get('runs/W-1').expect(200)).body.status).toBe('CANCELLED');
    await post('runs/W-1/resume').expect(200);
    await eventually(async () => (await get('runs/W-1').expect(200)).body.status === 'WAITING', 10_000, 'the resumed run to wait');
    await client.send('W-1', 'go', 'now');
    await eventually(async () => (await get('runs/W-1').expect(200)).body.output === 'now', 10_000, 'the run to end');
    const history = (await get('runs/W-1').expect(200)).body.history.map((h: { kind: string }) => h.kind);
    expect(history).toEqual(expect.arrayContaining(['cancelled', 'resumed', 'completed']));
  });

  it('answers statistics, charts, versions and blockers from the database', async () => {
    const stats = await get('stats').expect(200);
    expect(stats.body.totals.counts).toEqual({ PENDING: 0, RUNNING: 0, WAITING: 0, SUCCEEDED: 13, FAILED: 3, CANCELLED: 0 });
    const minutes = stats.body.totals.perMinute as Array<{ started: number; succeeded: number; failed: number }>;
    expect(minutes).toHaveLength(60);
    expect(minutes.reduce((n, m) => n + m.started, 0)).toBe(16);
    expect(minutes.reduce((n, m) => n + m.failed, 0)).toBe(3);
    expect(stats.body.groups.map((g: { workflow: string }) => g.workflow)).toEqual(['bad', 'ok', 'waiter']);
    const charts = await get('charts?range=1h').expect(200);
    const started = charts.body.buckets.reduce((n: number, b: { started: number }) => n + b.started, 0);
    const succeeded = charts.body.buckets.reduce((n: number, b: { succeeded: number }) => n + b.succeeded, 0);
    expect(started).toBe(16);
    expect(succeeded).toBeGreaterThanOrEqual(12);
    expect((await get('versions').expect(200)).body).toBeDefined();
    const blockers = await get('runs/A-001/blockers').expect(200);
    expect(blockers.body).toMatchObject({ status: 'SUCCEEDED' });
  });

  it('serves `npx nestjs-durable runs` with no app running: list, show, cancel', async () => {
    const cli = async (...args: string[]) => {
      let out = '';
      let err = '';
      const code = await runRunsCommand(
        args,
        { cwd: process.cwd(), out: (t) => (out += t), err: (t) => (err += t) },
        { DATABASE_URL: db.url },
      );
      return { code, out, err };
    };
    const list = await cli('list', '--status', 'FAILED', '--json');
    expect(list).toMatchObject({ code: 0, err: '' });
    expect(
      JSON.parse(list.out)
        .items.map((r: { id: string }) => r.id)
        .sort(),
    ).toEqual(['B-0', 'B-1', 'B-2']);
    const shown = await cli('show', 'A-004', '--json');
    expect(JSON.parse(shown.out)).toMatchObject({ id: 'A-004', status: 'SUCCEEDED', output: { doubled: 8 } });
    await client.start('waiter', {}, { id: 'W-2' });
    await eventually(async () => (await client.getRun('W-2'))?.status === 'WAITING', 10_000, 'the run to wait');
    expect((await cli('cancel', 'W-2')).code).toBe(0);
    expect((await client.getRun('W-2'))?.status).toBe('CANCELLED');
  });

  it('shows the live progress a running step reports, and its input searched by containment', async () => {
    await client.start('crunch', {}, { id: 'C-1' });
    const live = await eventually(async () => (await get('runs/C-1').expect(200)).body.progress, 10_000, 'the progress');
    expect(live.steps).toEqual([{ seq: 0, step: 'crunch', value: { done: 3, total: 10 } }]);
    releaseCrunch();
    await eventually(async () => (await get('runs/C-1').expect(200)).body.status === 'SUCCEEDED', 10_000, 'the run to end');
    const found = await get(`runs?input=${encodeURIComponent(JSON.stringify({ n: 7 }))}`).expect(200);
    expect(found.body.items.map((r: { id: string }) => r.id)).toEqual(['A-007']);
  });

  it('acts on many runs by filter: bulk delete of finished runs, counted first', async () => {
    const preview = await post('runs/bulk/preview', { action: 'delete', filter: { workflow: ['bad'] } });
    expect(preview.status).toBe(200);
    expect(preview.body).toMatchObject({ matched: 3 });
    expect(await client.bulk('delete', { workflows: ['bad'] })).toMatchObject({ action: 'delete', matched: 3, done: 3, skipped: 0 });
    expect(await db.query("SELECT id FROM durable_runs WHERE workflow_name = 'bad'")).toEqual([]);
    expect(await db.query("SELECT run_id FROM durable_run_events WHERE run_id LIKE 'B-%'")).toEqual([]);
  });
});
