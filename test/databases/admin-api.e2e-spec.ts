import { Injectable, UnauthorizedException, type CanActivate, type ExecutionContext, type INestApplication } from '@nestjs/common';
import { Durable, DurableRuntime, NonRetryableError, Workflow, WorkflowClient } from 'nestjs-durable';
import pg from 'pg';
import request from 'supertest';
import { LiveFeed, type LiveEvent } from '../../libs/durable/src/admin/live-feed.js';
import { parseFilter } from '../../libs/durable/src/admin/params.js';
import { runRunsCommand } from '../../libs/durable/src/cli/runs-command.js';
import { countByStatusWithin } from '../../libs/durable/src/store/admin-counts.js';
import { COUNT_CAP } from '../../libs/durable/src/store/admin-list.js';
import { lazyMysqlPool, mysqlPoolConfig, mysqlSqlClient } from '../../libs/durable/src/store/mysql-client.js';
import { pgSqlClient, prismaSqlClient } from '../../libs/durable/src/store/sql-client.js';
import { createStore, type Store } from '../../libs/durable/src/store/store.js';
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

/** A step output over the run detail's CLIP_BYTES (64 kB): the detail shows its size and start only. */
const BIG = 'x'.repeat(70_000);

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

  @Workflow({ name: 'bad', queue: 'critical' })
  async bad() {
    await Durable.step('fails', async () => {
      throw new NonRetryableError('seeded failure');
    });
  }

  @Workflow({ name: 'waiter' })
  async waiter() {
    return Durable.recv<string>('go', { timeoutMs: 600_000 });
  }

  @Workflow({ name: 'sleeper' })
  async sleeper() {
    await Durable.setEvent('phase', 'napping');
    await Durable.step('prep', async () => BIG);
    await Durable.sleep(600_000);
  }

  @Workflow({ name: 'family' })
  async family() {
    const child = await Durable.startChild<string>('leaf', { leaf: true }, { id: 'F-1.leaf' });
    return child.result();
  }

  @Workflow({ name: 'leaf' })
  async leaf() {
    return Durable.step('grow', async () => 'leafy');
  }
}

/** A runs-list item as the API answers it (the fields the assertions sort and filter by, and the rest). */
type Item = { id: string; createdAt: string; updatedAt: string; finishedAt: string | null; [field: string]: any };
const ids = (items: Array<{ id: string }>) => items.map((r) => r.id);
const sorted = (items: Array<{ id: string }>) => ids(items).sort();
const sum = (rows: Array<Record<string, number>>, key: string) => rows.reduce((n, r) => n + r[key], 0);

/**
 * The admin API on every database: the runs list with each filter, its sort orders, counts and
 * cursor, one run in detail, cancel and resume, statistics, charts, versions, the live feed, hooks
 * and "why not started" — the same requests and the same answers on PostgreSQL and MariaDB.
 *
 * The runs: A-000…A-011 (ok, SUCCEEDED; every third tagged vip, the even ones of them eu too),
 * B-0…B-2 (bad, queue critical, FAILED), W-1 (waits for a message), S-1 (asleep for 10 minutes, a
 * big step output, an event), A_X (cancelled while waiting), F-1 and its child F-1.leaf (SUCCEEDED).
 */
describe.each(DATABASES)('the admin API on %s', (kind) => {
  let db: KindDatabase;
  let app: INestApplication;
  let client: WorkflowClient;
  const get = (path: string) => request(app.getHttpServer()).get(`/durable/${path}`).set('authorization', `Bearer ${TOKEN}`);
  const post = (path: string, body?: object) =>
    request(app.getHttpServer()).post(`/durable/${path}`).set('authorization', `Bearer ${TOKEN}`).send(body);
  const list = async (query: string): Promise<Item[]> => (await get(`runs?limit=200&${query}`).expect(200)).body.items;
  const SEEDED = { PENDING: 0, RUNNING: 0, WAITING: 2, SUCCEEDED: 14, FAILED: 3, CANCELLED: 1 };

  beforeAll(async () => {
    db = await openDatabase(kind, `admin_${kind}`);
    app = await durableApp(db, [Jobs], { admin: { guards: [TokenGuard] }, appVersion: 'v7' });
    client = app.get(WorkflowClient);
    for (let i = 0; i < 12; i++) {
      const tags = i % 3 ? [] : i % 2 ? ['vip'] : ['vip', 'eu'];
      await client.start('ok', { n: i }, { id: `A-${String(i).padStart(3, '0')}`, tags });
    }
    for (let i = 0; i < 3; i++) await client.start('bad', {}, { id: `B-${i}` });
    await client.start('waiter', {}, { id: 'W-1' });
    await client.start('waiter', {}, { id: 'A_X' });
    await client.start('sleeper', {}, { id: 'S-1' });
    await client.start('family', {}, { id: 'F-1', tags: ['family'] });
    await eventually(async () => (await client.getRun('A_X'))?.status === 'WAITING', 10_000, 'A_X to wait');
    await client.cancel('A_X');
    let counts: unknown;
    await eventually(
      async () => {
        counts = (await get('runs?limit=200').expect(200)).body.counts;
        return JSON.stringify(counts) === JSON.stringify(SEEDED);
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

  it('lists runs with exact counts, by status, workflow, queue, parent and id', async () => {
    const all = await get('runs?limit=200').expect(200);
    expect(all.body).toMatchObject({ counts: SEEDED, countsCapped: [], countsEstimated: false, total: 20 });
    expect(all.body.items).toHaveLength(20);

    const failed = await get('runs?status=FAILED').expect(200);
    expect(sorted(failed.body.items)).toEqual(['B-0', 'B-1', 'B-2']);
    expect(failed.body.items[0]).toMatchObject({ errorMessage: 'seeded failure', queue: 'critical', workflowName: 'bad' });
    expect(failed.body.total).toBe(3);
    // The counts ignore the status filter (they label the status tabs); the total follows it.
    expect(failed.body.counts).toEqual(SEEDED);
    expect(sorted(await list('status=FAILED,CANCELLED'))).toEqual(['A_X', 'B-0', 'B-1', 'B-2']);
    expect(sorted(await list('status=waiting'))).toEqual(['S-1', 'W-1']);

    expect(await list('workflow=ok')).toHaveLength(12);
    expect(sorted(await list('workflow=family&workflow=leaf'))).toEqual(['F-1', 'F-1.leaf']);
    expect(await list('workflow=OK')).toEqual([]);
    expect(sorted(await list('queue=critical'))).toEqual(['B-0', 'B-1', 'B-2']);
    expect(await list('queue=default')).toHaveLength(17);
    const critical = await get('runs?queue=critical').expect(200);
    expect(critical.body.counts).toEqual({ PENDING: 0, RUNNING: 0, WAITING: 0, SUCCEEDED: 0, FAILED: 3, CANCELLED: 0 });

    expect(await list('parentId=F-1')).toMatchObject([{ id: 'F-1.leaf', parentId: 'F-1', status: 'SUCCEEDED' }]);
    expect(sorted(await list('id=A-001,B-0&id=nothing'))).toEqual(['A-001', 'B-0']);

    // An id prefix is a prefix, byte for byte: LIKE's wildcards in it are literal, and case matters.
    expect(await list('idPrefix=A-00')).toHaveLength(10);
    expect(ids(await list('idPrefix=A_'))).toEqual(['A_X']);
    expect(await list('idPrefix=A%25')).toEqual([]);
    expect(await list('idPrefix=a-')).toEqual([]);
    expect(sorted(await list('idPrefix=F-1'))).toEqual(['F-1', 'F-1.leaf']);
  });

  it('lists runs by tags (all of them), input and time ranges', async () => {
    const vip = await get('runs?tag=vip&limit=200').expect(200);
    expect(sorted(vip.body.items)).toEqual(['A-000', 'A-003', 'A-006', 'A-009']);
    expect(vip.body.counts).toEqual({ PENDING: 0, RUNNING: 0, WAITING: 0, SUCCEEDED: 4, FAILED: 0, CANCELLED: 0 });
    expect(vip.body.items.find((r: { id: string }) => r.id === 'A-006').tags).toEqual(['vip', 'eu']);
    expect(vip.body.items.find((r: { id: string }) => r.id === 'A-003').tags).toEqual(['vip']);
    expect(sorted(await list('tag=vip&tag=eu'))).toEqual(['A-000', 'A-006']);
    expect(sorted(await list('tag=eu,vip'))).toEqual(['A-000', 'A-006']);
    expect(sorted(await list('tag=family'))).toEqual(['F-1', 'F-1.leaf']); // a child inherits its parent's tags
    expect(await list('tag=VIP')).toEqual([]);
    expect(await list('tag=vip&workflow=bad')).toEqual([]);
    expect((await list('workflow=bad'))[0].tags).toEqual([]);

    expect(ids(await list(`input=${encodeURIComponent(JSON.stringify({ n: 7 }))}`))).toEqual(['A-007']);
    expect(ids(await list(`input=${encodeURIComponent(JSON.stringify({ leaf: true }))}`))).toEqual(['F-1.leaf']);

    // Ranges: from inclusive, to exclusive, against the times the list itself shows.
    const all: Item[] = await list('sort=created&order=asc');
    const from = all[5].createdAt;
    const to = all[12].createdAt;
    const created = all.filter((r) => r.createdAt >= from && r.createdAt < to);
    expect(created.length).toBeGreaterThanOrEqual(1);
    expect(sorted(await list(`createdFrom=${from}&createdTo=${to}`))).toEqual(sorted(created));
    expect(sorted(await list(`createdFrom=${from}`))).toEqual(sorted(all.filter((r) => r.createdAt >= from)));
    expect(sorted(await list(`createdTo=${to}`))).toEqual(sorted(all.filter((r) => r.createdAt < to)));
    const finished = all.filter((r) => r.finishedAt).sort((a, b) => a.finishedAt!.localeCompare(b.finishedAt!));
    const fFrom = finished[2].finishedAt!;
    const fTo = finished[finished.length - 2].finishedAt!;
    const inWindow = finished.filter((r) => r.finishedAt! >= fFrom && r.finishedAt! < fTo);
    expect(sorted(await list(`finishedFrom=${fFrom}&finishedTo=${fTo}`))).toEqual(sorted(inWindow));
    // Unfinished runs have no finish time: a finished range leaves them out.
    expect(sorted(await list('finishedFrom=2000-01-01T00:00:00.000Z'))).toEqual(sorted(finished));
    expect(await list('createdFrom=2999-01-01T00:00:00.000Z')).toEqual([]);
  });

  it('sorts by creation or update, both ways, and its cursor walks every page once in that order', async () => {
    const all: Item[] = await list('');
    const byKey = (key: 'createdAt' | 'updatedAt', dir: 1 | -1) => (a: Item, b: Item) =>
      dir * (a[key].localeCompare(b[key]) || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
    for (const [sort, key] of [
      ['created', 'createdAt'],
      ['updated', 'updatedAt'],
    ] as const) {
      for (const [order, dir] of [
        ['desc', -1],
        ['asc', 1],
      ] as const) {
        const expected = ids([...all].sort(byKey(key, dir)));
        expect(ids(await list(`sort=${sort}&order=${order}`))).toEqual(expected);
        const seen: string[] = [];
        let cursor: string | null = null;
        let pages = 0;
        do {
          const page: request.Response = await get(`runs?sort=${sort}&order=${order}&limit=3${cursor ? `&cursor=${cursor}` : ''}`).expect(
            200,
          );
          seen.push(...ids(page.body.items));
          cursor = page.body.nextCursor;
          pages++;
        } while (cursor);
        expect(seen).toEqual(expected);
        expect(pages).toBe(7);
      }
    }
    // A cursor with a filter: the pages of the workflow only.
    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const page: request.Response = await get(`runs?workflow=ok&limit=5${cursor ? `&cursor=${cursor}` : ''}`).expect(200);
      seen.push(...ids(page.body.items));
      cursor = page.body.nextCursor;
    } while (cursor);
    expect(seen).toEqual(ids(all.filter((r) => r.id.startsWith('A-'))));
  });

  it("shows each run's summary in the list: steps, output, error, and what a waiting run waits for", async () => {
    const ok = (await list('idPrefix=A-001'))[0];
    expect(ok).toMatchObject({ id: 'A-001', status: 'SUCCEEDED', stepCount: 2, appVersion: 'v7', parentId: null, errorMessage: null });
    expect(JSON.parse(ok.outputSummary)).toEqual({ doubled: 2 });
    const [waiting, asleep] = await Promise.all([list('idPrefix=W-1'), list('idPrefix=S-1')]);
    expect(waiting[0]).toMatchObject({ status: 'WAITING', waits: [{ seq: 0, kind: 'recv', key: 'go' }] });
    expect(asleep[0]).toMatchObject({ status: 'WAITING', stepCount: 3, outputSummary: null });
    expect(asleep[0].waits).toEqual([{ seq: expect.any(Number), kind: 'sleep', key: null }]);
    expect((await list('idPrefix=A_X'))[0]).toMatchObject({ status: 'CANCELLED', waits: null });
  });

  it('shows one run with its steps, events, children and history; big values clipped', async () => {
    const detail = await get('runs/A-002').expect(200);
    expect(detail.body).toMatchObject({ id: 'A-002', status: 'SUCCEEDED', input: { n: 2 }, output: { doubled: 4 }, appVersion: 'v7' });
    expect(detail.body.steps.map((s: { name: string; status: string }) => `${s.name}:${s.status}`)).toEqual([
      'one:SUCCEEDED',
      'two:SUCCEEDED',
    ]);
    expect(detail.body.steps[1]).toMatchObject({ seq: 1, attempts: 1, output: { doubled: 4 }, error: null });
    expect(detail.body.history.map((h: { kind: string }) => h.kind)).toEqual(['created', 'claimed', 'completed']);
    expect(detail.body.totals).toEqual({ steps: 2, history: 3, messages: 0, events: 0, children: 0 });
    expect(detail.body.tags).toEqual([]);
    expect((await get('runs/A-006').expect(200)).body.tags).toEqual(['vip', 'eu']);

    const asleep = (await get('runs/S-1').expect(200)).body;
    expect(asleep).toMatchObject({ status: 'WAITING', output: null, progress: null, totals: { events: 1, children: 0 } });
    expect(asleep.events).toMatchObject([{ key: 'phase', value: 'napping' }]);
    const prep = asleep.steps.find((s: { name: string }) => s.name === 'prep');
    expect(prep.output).toEqual({ $truncated: true, bytes: BIG.length + 2, preview: `"${BIG.slice(0, 1999)}` });
    expect(asleep.steps.find((s: { name: string }) => s.name === 'durable.sleep')).toMatchObject({ wait: { kind: 'sleep' } });
    expect(asleep.startBlockers).toMatchObject({ status: 'WAITING', claimable: false });

    const family = (await get('runs/F-1').expect(200)).body;
    expect(family).toMatchObject({ status: 'SUCCEEDED', output: 'leafy', totals: { children: 1 } });
    expect(family.children).toEqual([
      { id: 'F-1.leaf', workflowName: 'leaf', status: 'SUCCEEDED', createdAt: expect.any(String), finishedAt: expect.any(String) },
    ]);
    expect((await get('runs/F-1.leaf').expect(200)).body).toMatchObject({ parentId: 'F-1', input: { leaf: true }, output: 'leafy' });
    await get('runs/no-such-run').expect(404);
  });

  it('cancels and resumes a run, then shows the message it received', async () => {
    const cancelled = await post('runs/W-1/cancel').expect(200);
    expect(cancelled.body).toMatchObject({ id: 'W-1', workflowName: 'waiter', status: 'CANCELLED', cancelRequestedAt: null });
    expect((await get('runs/W-1').expect(200)).body.status).toBe('CANCELLED');
    expect((await post('runs/W-1/resume').expect(200)).body).toMatchObject({ id: 'W-1', status: expect.any(String) });
    await eventually(async () => (await get('runs/W-1').expect(200)).body.status === 'WAITING', 10_000, 'the resumed run to wait');
    await client.send('W-1', 'go', 'now');
    await eventually(async () => (await get('runs/W-1').expect(200)).body.output === 'now', 10_000, 'the run to end');
    const done = (await get('runs/W-1').expect(200)).body;
    expect(done.history.map((h: { kind: string }) => h.kind)).toEqual(expect.arrayContaining(['cancelled', 'resumed', 'completed']));
    expect(done.messages).toMatchObject([{ topic: 'go', payload: 'now', consumedSeq: 0 }]);
    expect(done.totals.messages).toBe(1);
  });

  it('answers statistics, charts, versions and blockers from the database', async () => {
    // W-1 has succeeded since: 15 succeeded, S-1 the only unfinished run.
    const stats = (await get('stats').expect(200)).body;
    expect(stats.totals.counts).toEqual({ PENDING: 0, RUNNING: 0, WAITING: 1, SUCCEEDED: 15, FAILED: 3, CANCELLED: 1 });
    const minutes = stats.totals.perMinute;
    expect(minutes).toHaveLength(60);
    expect(sum(minutes, 'started')).toBe(20);
    expect(sum(minutes, 'succeeded')).toBe(15);
    expect(sum(minutes, 'failed')).toBe(3);
    expect(sum(minutes, 'cancelled')).toBe(1);
    expect(Date.parse(minutes[59].minute) % 60_000).toBe(0);
    expect(Math.abs(Date.parse(stats.generatedAt) - Date.now())).toBeLessThan(60_000);
    expect(stats.database).toEqual(
      kind === 'mariadb'
        ? { dialect: 'mysql', wakeUps: 'polling', pollIntervalMs: 100 }
        : { dialect: 'postgres', wakeUps: 'listen-notify', pollIntervalMs: 100 },
    );
    expect(stats.groups.map((g: { workflow: string; queue: string }) => `${g.workflow}@${g.queue}`)).toEqual([
      'bad@critical',
      'family@default',
      'leaf@default',
      'ok@default',
      'sleeper@default',
      'waiter@default',
    ]);
    const bad = stats.groups[0];
    expect(bad.counts.FAILED).toBe(3);
    expect(sum(bad.perMinute, 'failed')).toBe(3);
    expect(stats.groups[4].counts.WAITING).toBe(1);

    for (const [range, buckets] of [
      ['1h', 60],
      ['24h', 48],
      ['7d', 56],
    ] as const) {
      const charts = (await get(`charts?range=${range}`).expect(200)).body;
      expect(charts.buckets.length).toBeGreaterThanOrEqual(buckets - 1);
      expect(charts.buckets.length).toBeLessThanOrEqual(buckets);
      expect(sum(charts.buckets, 'started')).toBe(20);
      expect(sum(charts.buckets, 'succeeded')).toBe(15);
      expect(sum(charts.buckets, 'failed')).toBe(3);
      expect(sum(charts.buckets, 'cancelled')).toBe(1);
    }

    const versions = (await get('versions').expect(200)).body;
    expect(versions).toMatchObject({
      appVersion: 'v7',
      versions: [{ appVersion: 'v7', inFlight: 1, pending: 0, running: 0, waiting: 1, workflows: [{ workflow: 'sleeper', inFlight: 1 }] }],
    });

    const asleep = (await get('runs/S-1/blockers').expect(200)).body;
    expect(asleep).toMatchObject({ runId: 'S-1', status: 'WAITING', queue: 'default', claimable: false, queueRunning: 0 });
    expect(asleep.reasons[0]).toMatch(/^waiting \(sleep, message or child\) until /);
    expect((await get('runs/A-001/blockers').expect(200)).body).toMatchObject({ status: 'SUCCEEDED', reasons: [], claimable: false });
  });

  it('feeds live changes: the runs that changed, once, and the version of a run open in a detail view', async () => {
    const store = app.get(DurableRuntime).engine.storeForTools;
    const feed = new LiveFeed(
      () => store,
      async () => ({}),
      { intervalMs: 3_600_000, pingMs: 3_600_000, statsEveryMs: 3_600_000, slackMs: 1000, maxLookBackMs: 60_000 },
    );
    const events: LiveEvent[] = [];
    const off = feed.subscribe({ run: 'S-1', stats: false }, (e) => events.push(e));
    const named = () => events.flatMap((e) => (e.type === 'changes' ? e.data.ids : []));
    const versions = () => events.flatMap((e) => (e.type === 'run' ? [e.data] : []));
    try {
      await feed.tick();
      expect(versions()).toEqual([{ id: 'S-1', version: expect.stringMatching(/^WAITING:/) }]);
      const before = named().length;
      await client.cancel('S-1');
      await feed.tick();
      expect(named().slice(before)).toContain('S-1');
      expect(versions()).toHaveLength(2);
      expect(versions()[1].version).toMatch(/^CANCELLED:/);
      const after = named().length;
      await feed.tick();
      await feed.tick();
      expect(named().slice(after)).not.toContain('S-1');
      expect(versions()).toHaveLength(2);
    } finally {
      off();
    }
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
    const listed = await cli('list', '--status', 'FAILED', '--json');
    expect(listed).toMatchObject({ code: 0, err: '' });
    expect(sorted(JSON.parse(listed.out).items)).toEqual(['B-0', 'B-1', 'B-2']);
    const shown = await cli('show', 'A-004', '--json');
    expect(JSON.parse(shown.out)).toMatchObject({ id: 'A-004', status: 'SUCCEEDED', output: { doubled: 8 } });
    await client.start('waiter', {}, { id: 'W-2' });
    await eventually(async () => (await client.getRun('W-2'))?.status === 'WAITING', 10_000, 'the run to wait');
    expect((await cli('cancel', 'W-2')).code).toBe(0);
    expect((await client.getRun('W-2'))?.status).toBe('CANCELLED');
  });

  it('shows the live progress a running step reports', async () => {
    await client.start('crunch', {}, { id: 'C-1' });
    const live = await eventually(async () => (await get('runs/C-1').expect(200)).body.progress, 10_000, 'the progress');
    expect(live.steps).toEqual([{ seq: 0, step: 'crunch', value: { done: 3, total: 10 } }]);
    releaseCrunch();
    await eventually(async () => (await get('runs/C-1').expect(200)).body.status === 'SUCCEEDED', 10_000, 'the run to end');
    expect((await get('runs/C-1').expect(200)).body.progress).toBeNull();
  });

  it('acts on many runs by filter: bulk delete of finished runs, counted first', async () => {
    const preview = await post('runs/bulk/preview', { action: 'delete', filter: { workflow: ['bad'] } });
    expect(preview.status).toBe(200);
    expect(preview.body).toMatchObject({ matched: 3 });
    expect(await client.bulk('delete', { workflows: ['bad'] })).toMatchObject({ action: 'delete', matched: 3, done: 3, skipped: 0 });
    expect(await db.query("SELECT id FROM durable_runs WHERE workflow_name = 'bad'")).toEqual([]);
    expect(await db.query("SELECT run_id FROM durable_run_events WHERE run_id LIKE 'B-%'")).toEqual([]);
    expect(await list('queue=critical')).toEqual([]);
  });
});

/**
 * The runs list's per-status counts within their time budget, on 60,000 runs: exact (capped) within
 * it, the optimizer's estimates past it — through the engine's own pool and through Prisma alike.
 */
describe.each(DATABASES)('the admin counts within a time budget on %s', (kind) => {
  const RUNS = 60_000;
  let db: KindDatabase;
  const closers: Array<() => Promise<void>> = [];
  const stores: Array<[string, Store]> = [];

  beforeAll(async () => {
    db = await openDatabase(kind, `admin_counts_${kind}`);
    if (kind === 'postgres') {
      await db.query(
        `INSERT INTO durable_runs (id, workflow_name, status, input)
         SELECT 'R-' || g, 'job', CASE WHEN g % 4 = 0 THEN 'SUCCEEDED' ELSE 'PENDING' END, jsonb_build_object('n', g)
         FROM generate_series(1, ${RUNS}) g`,
      );
      await db.query('ANALYZE durable_runs');
      const pool = new pg.Pool({ connectionString: db.url, max: 2 });
      closers.push(() => pool.end());
      stores.push(['pool', createStore(pgSqlClient(pool, { prepared: false }), { history: true })]);
    } else {
      await db.query(
        `INSERT INTO durable_runs (id, workflow_name, status, input, created_at, updated_at, available_at, order_at)
         SELECT CONCAT('R-', seq), 'job', IF(seq % 4 = 0, 'SUCCEEDED', 'PENDING'), JSON_OBJECT('n', seq),
                UTC_TIMESTAMP(3), UTC_TIMESTAMP(3), UTC_TIMESTAMP(3), UTC_TIMESTAMP(3)
         FROM seq_1_to_${RUNS}`,
      );
      await db.query('ANALYZE TABLE durable_runs');
      const pool = lazyMysqlPool(mysqlPoolConfig(db.url, 2));
      closers.push(() => pool.end());
      stores.push(['pool', createStore(mysqlSqlClient(pool.get), { history: true })]);
    }
    stores.push(['prisma', createStore(prismaSqlClient(db.prisma), { history: true })]);
  }, 60_000);
  afterAll(async () => {
    for (const close of closers) await close();
    await db?.close();
  });

  it('counts exactly within the budget, each status capped', async () => {
    for (const [, store] of stores) {
      const all = await countByStatusWithin(store, parseFilter({}), COUNT_CAP);
      expect(all).toEqual({
        estimated: false,
        counts: { PENDING: COUNT_CAP + 1, RUNNING: 0, WAITING: 0, SUCCEEDED: COUNT_CAP + 1, FAILED: 0, CANCELLED: 0 },
      });
      const few = await countByStatusWithin(store, parseFilter({ idPrefix: 'R-1234' }), COUNT_CAP);
      // R-1234 and R-12340…R-12349: 11 runs, R-12340, R-12344 and R-12348 of them SUCCEEDED (n % 4 = 0).
      expect(few).toEqual({ estimated: false, counts: expect.objectContaining({ PENDING: 8, SUCCEEDED: 3, FAILED: 0 }) });
    }
  });

  it("past the budget, answers the optimizer's estimates (no error, no wait), marked estimated", async () => {
    for (const [via, store] of stores) {
      // An input no run has: each status's count reads all of its rows to find none.
      const started = Date.now();
      const slow = await countByStatusWithin(store, parseFilter({ input: JSON.stringify({ n: -1 }) }), COUNT_CAP, 1);
      expect({ via, estimated: slow.estimated }).toEqual({ via, estimated: true });
      expect(Date.now() - started).toBeLessThan(5_000);
      for (const n of Object.values(slow.counts)) expect(Number.isInteger(n) && n >= 0).toBe(true);
      // An estimate of a filter every run matches has the magnitude of the real figures (45,000
      // PENDING, none FAILED). PostgreSQL's is near them; InnoDB's range estimates stop at half the
      // table, and MariaDB guesses a condition's share without histograms.
      const broad = await countByStatusWithin(store, parseFilter({ workflow: 'job' }), COUNT_CAP, 1);
      expect({ via, estimated: broad.estimated }).toEqual({ via, estimated: true });
      expect(broad.counts.PENDING).toBeGreaterThan(RUNS * 0.05);
      expect(broad.counts.PENDING).toBeLessThanOrEqual(RUNS);
      expect(broad.counts.FAILED).toBeLessThan(RUNS * 0.01);
    }
  });
});
