import { WorkflowClient } from 'nestjs-durable';
import request from 'supertest';
import { createAdminApp, seedRuns, type AdminApp } from './support/admin-app.js';
import { eventually } from '../support/engine-harness.js';

const STATUSES = ['PENDING', 'RUNNING', 'WAITING', 'SUCCEEDED', 'FAILED', 'CANCELLED'];
const MIN = 60_000;

describe('admin API (real Nest app, real Postgres)', () => {
  let a: AdminApp;
  let client: WorkflowClient;
  const get = (path: string) => request(a.server).get(`/durable/${path}`);
  const post = (path: string, body?: object) => request(a.server).post(`/durable/${path}`).send(body);
  /** Every page of a listing, following nextCursor. */
  async function walk(query: string, limit: number): Promise<string[]> {
    const ids: string[] = [];
    let cursor: string | null = null;
    for (let page = 0; page < 1000; page++) {
      const res: request.Response = await get(`runs?${query}&limit=${limit}${cursor ? `&cursor=${cursor}` : ''}`).expect(200);
      expect(res.body.items.length).toBeLessThanOrEqual(limit);
      ids.push(...res.body.items.map((r: { id: string }) => r.id));
      cursor = res.body.nextCursor;
      if (!cursor) return ids;
    }
    throw new Error('too many pages');
  }

  beforeAll(async () => {
    a = await createAdminApp('admin_api');
    client = a.app.get(WorkflowClient);
    // 120 runs one minute apart (newest one minute ago): statuses, workflows and queues cycle.
    await seedRuns(a.pool, { count: 120, prefix: 'L-', spacingMs: MIN, newestAgoMs: MIN, steps: 2 });
    await seedRuns(a.pool, { count: 5, prefix: 'C-', parentId: 'L-00001', spacingMs: 1000, newestAgoMs: 500 });
  });
  afterAll(() => a.close());

  describe('GET runs', () => {
    it('lists newest first with a cursor, counts per status and a total', async () => {
      const res = await get('runs?idPrefix=L-').expect(200);
      expect(res.body.items).toHaveLength(50);
      expect(res.body.items[0].id).toBe('L-00119');
      expect(res.body.items[49].id).toBe('L-00070');
      expect(res.body.nextCursor).toEqual(expect.any(String));
      expect(res.body.counts).toEqual({ PENDING: 20, RUNNING: 20, WAITING: 20, SUCCEEDED: 20, FAILED: 20, CANCELLED: 20 });
      expect(res.body.total).toBe(120);
      expect(res.body).toMatchObject({ limit: 50, sort: 'created', order: 'desc', countsCapped: [], countCap: 10_000 });
      const item = res.body.items[0];
      expect(item).toMatchObject({ id: 'L-00119', workflowName: expect.any(String), queue: expect.stringMatching(/^seed-/), stepCount: 2 });
      expect(new Date(item.createdAt).toISOString()).toBe(item.createdAt);
      expect(item).not.toHaveProperty('input');
    });

    it('filters by one status; counts still describe every status for the other filters', async () => {
      const res = await get('runs?idPrefix=L-&status=FAILED&limit=200').expect(200);
      expect(res.body.items).toHaveLength(20);
      expect(res.body.items.every((r: { status: string }) => r.status === 'FAILED')).toBe(true);
      expect(res.body.counts.PENDING).toBe(20);
      expect(res.body.total).toBe(20);
      expect(res.body.items.find((r: { errorMessage: string }) => r.errorMessage?.startsWith('seeded failure'))).toBeTruthy();
    });

    it('filters by several statuses: comma-separated, repeated, any case', async () => {
      for (const q of [
        'status=FAILED,CANCELLED',
        'status=FAILED&status=CANCELLED',
        'status=failed,%20Cancelled',
        'status=FAILED,,CANCELLED,FAILED',
      ]) {
        const res = await get(`runs?idPrefix=L-&limit=200&${q}`).expect(200);
        expect(res.body.items).toHaveLength(40);
        expect(new Set(res.body.items.map((r: { status: string }) => r.status))).toEqual(new Set(['FAILED', 'CANCELLED']));
        expect(res.body.total).toBe(40);
      }
    });

    it('filters by workflow and queue (one or several)', async () => {
      const wf = await get('runs?idPrefix=L-&workflow=mail.send&limit=200').expect(200);
      expect(wf.body.items).toHaveLength(40);
      expect(wf.body.items.every((r: { workflowName: string }) => r.workflowName === 'mail.send')).toBe(true);
      const two = await get('runs?idPrefix=L-&workflow=mail.send&workflow=report.build&limit=200').expect(200);
      expect(two.body.items).toHaveLength(80);
      const q = await get('runs?idPrefix=L-&queue=seed-b&limit=200').expect(200);
      expect(q.body.items).toHaveLength(60);
      expect(q.body.items.every((r: { queue: string }) => r.queue === 'seed-b')).toBe(true);
      const both = await get('runs?idPrefix=L-&queue=seed-b&workflow=billing.charge&status=PENDING&limit=200').expect(200);
      // i % 3 = 0 (billing.charge), i % 2 = 1 (seed-b), i % 6 = 0 (PENDING): impossible together.
      expect(both.body.items).toHaveLength(0);
      expect(both.body.nextCursor).toBeNull();
      const none = await get('runs?workflow=no.such.workflow').expect(200);
      expect(none.body).toMatchObject({ items: [], nextCursor: null, total: 0 });
    });

    it('filters by created range: from inclusive, to exclusive; ISO or epoch ms', async () => {
      const { rows } = await a.pool.query(`SELECT id, created_at FROM durable_runs WHERE id IN ('L-00010', 'L-00020') ORDER BY id`);
      const from = rows[0].created_at as Date,
        to = rows[1].created_at as Date;
      const iso = await get(`runs?idPrefix=L-&limit=200&createdFrom=${from.toISOString()}&createdTo=${to.toISOString()}`).expect(200);
      expect(iso.body.items.map((r: { id: string }) => r.id)).toEqual(Array.from({ length: 10 }, (_, i) => `L-000${19 - i}`));
      const ms = await get(`runs?idPrefix=L-&limit=200&createdFrom=${from.getTime()}&createdTo=${to.getTime()}`).expect(200);
      expect(ms.body.items).toHaveLength(10);
      const open = await get(`runs?idPrefix=L-&limit=200&createdFrom=${to.toISOString()}`).expect(200);
      expect(open.body.items).toHaveLength(100);
      expect(open.body.total).toBe(100);
    });

    it('filters by finished range (only finished runs match)', async () => {
      const res = await get(`runs?idPrefix=L-&limit=200&finishedFrom=${new Date(Date.now() - 3 * 3600_000).toISOString()}`).expect(200);
      expect(res.body.items).toHaveLength(60);
      expect(
        res.body.items.every(
          (r: { finishedAt: string | null; status: string }) => r.finishedAt && ['SUCCEEDED', 'FAILED', 'CANCELLED'].includes(r.status),
        ),
      ).toBe(true);
      const none = await get(`runs?idPrefix=L-&finishedTo=${new Date(Date.now() - 10 * 3600_000).toISOString()}`).expect(200);
      expect(none.body.items).toHaveLength(0);
    });

    it('filters by id prefix, taking LIKE wildcards literally', async () => {
      const res = await get('runs?idPrefix=L-0001&limit=200').expect(200);
      expect(res.body.items.map((r: { id: string }) => r.id).sort()).toEqual(Array.from({ length: 10 }, (_, i) => `L-0001${i}`));
      await seedRuns(a.pool, { count: 2, prefix: 'wild%_' });
      await seedRuns(a.pool, { count: 2, prefix: 'wildXY' });
      const wild = await get(`runs?idPrefix=${encodeURIComponent('wild%_')}`).expect(200);
      expect(wild.body.items.map((r: { id: string }) => r.id).sort()).toEqual(['wild%_00000', 'wild%_00001']);
      const under = await get(`runs?idPrefix=${encodeURIComponent('wild_')}`).expect(200);
      expect(under.body.items).toHaveLength(0);
    });

    it('filters by parent id', async () => {
      const res = await get('runs?parentId=L-00001').expect(200);
      expect(res.body.items.map((r: { id: string }) => r.id)).toEqual(['C-00004', 'C-00003', 'C-00002', 'C-00001', 'C-00000']);
      expect(res.body.items[0].parentId).toBe('L-00001');
    });

    it('sorts by created or updated, in either order', async () => {
      await a.pool.query(`UPDATE durable_runs SET updated_at = now() WHERE id = 'L-00003'`);
      const upd = await get('runs?idPrefix=L-&sort=updated&limit=3').expect(200);
      expect(upd.body.items[0].id).toBe('L-00003');
      expect(upd.body.sort).toBe('updated');
      const asc = await get('runs?idPrefix=L-&order=asc&limit=3').expect(200);
      expect(asc.body.items.map((r: { id: string }) => r.id)).toEqual(['L-00000', 'L-00001', 'L-00002']);
      const updAsc = await get('runs?idPrefix=L-&sort=updated&order=asc&limit=200').expect(200);
      const times = updAsc.body.items.map((r: { updatedAt: string }) => Date.parse(r.updatedAt));
      expect([...times].sort((x, y) => x - y)).toEqual(times);
      expect(updAsc.body.items[updAsc.body.items.length - 1].id).toBe('L-00003');
    });

    it('accepts limit 1 and 200, and pages through every run exactly once', async () => {
      const one = await get('runs?idPrefix=L-&limit=1').expect(200);
      expect(one.body.items).toHaveLength(1);
      const max = await get('runs?idPrefix=L-&limit=200').expect(200);
      expect(max.body.items).toHaveLength(120);
      expect(max.body.nextCursor).toBeNull();
      const all = Array.from({ length: 120 }, (_, i) => `L-${String(119 - i).padStart(5, '0')}`);
      expect(await walk('idPrefix=L-', 7)).toEqual(all);
      expect(await walk('idPrefix=L-&order=asc', 13)).toEqual([...all].reverse());
      expect(await walk('idPrefix=L-&order=asc', 120)).toEqual([...all].reverse());
      const byUpdated = await walk('idPrefix=L-&sort=updated', 11);
      expect(new Set(byUpdated).size).toBe(120);
      const failed = await walk('idPrefix=L-&status=FAILED', 3);
      expect(failed).toHaveLength(20);
    });

    it('keeps pages stable while runs are inserted, and breaks ties on the id', async () => {
      await seedRuns(a.pool, { count: 25, prefix: 'T-', spacingMs: 0, newestAgoMs: 30 * MIN });
      const first = await get('runs?idPrefix=T-&limit=10').expect(200);
      const page1 = first.body.items.map((r: { id: string }) => r.id);
      // Newer runs (and more runs with the same created_at) arrive between two page loads.
      await seedRuns(a.pool, { count: 5, prefix: 'T-new-', newestAgoMs: 0 });
      const rest: string[] = [];
      let cursor = first.body.nextCursor;
      while (cursor) {
        const res = await get(`runs?idPrefix=T-&limit=10&cursor=${cursor}`).expect(200);
        rest.push(...res.body.items.map((r: { id: string }) => r.id));
        cursor = res.body.nextCursor;
      }
      const seen = [...page1, ...rest];
      expect(seen).toHaveLength(25);
      expect(new Set(seen).size).toBe(25);
      expect(seen.every((id) => /^T-\d{5}$/.test(id))).toBe(true);
      expect(seen).toEqual([...seen].sort().reverse());
    });

    it('rejects a cursor issued for another ordering, or a forged one', async () => {
      const page = await get('runs?idPrefix=L-&limit=5').expect(200);
      const other = await get(`runs?idPrefix=L-&order=asc&cursor=${page.body.nextCursor}`).expect(400);
      expect(other.body).toMatchObject({ statusCode: 400, parameter: 'cursor' });
      expect(other.body.message).toContain('sort=created&order=desc');
      const forged = Buffer.from(JSON.stringify({ s: 'created', o: 'desc', t: 'yesterday', i: 'x' })).toString('base64url');
      await get(`runs?cursor=${forged}`).expect(400);
      await get('runs?cursor=not*base64').expect(400);
    });

    it('rejects bad parameters with 400 naming the parameter', async () => {
      const cases: Array<[string, string]> = [
        ['status=DONE', 'status'],
        ['limit=0', 'limit'],
        ['limit=201', 'limit'],
        ['limit=ten', 'limit'],
        ['limit=5&limit=6', 'limit'],
        ['sort=name', 'sort'],
        ['order=up', 'order'],
        ['createdFrom=yesterday', 'createdFrom'],
        ['createdTo=2026-13-45T99:99:99Z', 'createdTo'],
        ['finishedFrom=99999999999999999', 'finishedFrom'],
        [`createdFrom=${new Date().toISOString()}&createdTo=2020-01-01`, 'createdFrom'],
        [`idPrefix=${'x'.repeat(300)}`, 'idPrefix'],
        ['parentId=a%00b', 'parentId'],
        ['colour=red', 'colour'],
      ];
      for (const [q, param] of cases) {
        const res = await get(`runs?${q}`);
        expect({ q, status: res.status }).toEqual({ q, status: 400 });
        expect(res.body.parameter).toBe(param);
        expect(res.body.message).toContain(`"${param}"`);
      }
    });
  });

  describe('GET runs/:id', () => {
    it('returns the run with its step timeline, messages, events, history and children', async () => {
      await a.pool.query(
        `INSERT INTO durable_messages (run_id, topic, payload, idempotency_key) VALUES ('L-00001', 'approve', '{"by":"ann"}', 'k1'), ('L-00001', 'approve', '{"by":"bob"}', NULL)`,
      );
      await a.pool.query(`INSERT INTO durable_events (run_id, key, value) VALUES ('L-00001', 'progress', '{"pct":50}')`);
      await a.pool.query(
        `INSERT INTO durable_child_groups (run_id, seq, workflow, total, created, ended, succeeded, failed, wake_at) VALUES ('L-00001', 4, 'admin.sum', 5000, 3000, 1200, 1190, 10, 5000)`,
      );
      await a.pool.query(
        `INSERT INTO durable_run_events (run_id, kind, detail) VALUES ('L-00001', 'created', NULL), ('L-00001', 'claimed', '{"worker":"w1"}')`,
      );
      const res = await get('runs/L-00001').expect(200);
      const r = res.body;
      expect(r).toMatchObject({ id: 'L-00001', status: 'RUNNING', input: { i: 1 }, queue: 'seed-b', leaseEpoch: 1 });
      expect(r.steps).toEqual([
        expect.objectContaining({ seq: 0, name: 'step0', status: 'SUCCEEDED', attempts: 1, output: { k: 0 }, durationMs: 10 }),
        expect.objectContaining({ seq: 1, name: 'step1', status: 'SUCCEEDED', durationMs: 20 }),
      ]);
      expect(Date.parse(r.steps[1].finishedAt) - Date.parse(r.steps[1].startedAt)).toBe(20);
      expect(r.messages.map((m: { payload: unknown; idempotencyKey: string | null }) => [m.payload, m.idempotencyKey])).toEqual([
        [{ by: 'ann' }, 'k1'],
        [{ by: 'bob' }, null],
      ]);
      expect(typeof r.messages[0].id).toBe('string');
      expect(r.events).toEqual([expect.objectContaining({ key: 'progress', value: { pct: 50 } })]);
      expect(r.history.map((h: { kind: string }) => h.kind)).toEqual(['created', 'claimed']);
      expect(r.children.map((c: { id: string }) => c.id)).toEqual(['C-00000', 'C-00001', 'C-00002', 'C-00003', 'C-00004']);
      expect(r.totals).toEqual({ steps: 2, messages: 2, events: 1, history: 2, children: 5 });
      // Groups of children (Durable.startChildren) with their counters: where a fan-out stands.
      expect(r.groups).toEqual([
        {
          seq: 4,
          workflow: 'admin.sum',
          total: 5000,
          created: 3000,
          ended: 1200,
          succeeded: 1190,
          failed: 10,
          cancelled: 0,
          waitingFor: 5000,
        },
      ]);
    });

    it('shows a very large step output as a preview', async () => {
      await a.pool.query(
        `INSERT INTO durable_steps (run_id, seq, name, status, output) VALUES ('L-00002', 2, 'big', 'SUCCEEDED', to_jsonb(repeat('x', 100000)))`,
      );
      const res = await get('runs/L-00002').expect(200);
      expect(res.body.steps[2].output).toMatchObject({ $truncated: true, bytes: 100002 });
      expect(res.body.steps[2].output.preview).toHaveLength(2000);
    });

    it('answers 404 for an unknown id, 400 for an impossible one', async () => {
      const res = await get('runs/no-such-run').expect(404);
      expect(res.body).toMatchObject({ statusCode: 404, code: 'RUN_NOT_FOUND' });
      expect(res.body.message).toContain('no-such-run');
      await get(`runs/${'y'.repeat(257)}`).expect(400);
      await get('runs/a%00b').expect(400);
      await get('runs/L-00001?verbose=1').expect(400);
      await get(`runs/${encodeURIComponent("x' OR '1'='1")}`).expect(404);
    });

    it('answers 404 for a run that was not kept (deleted at its end), and says why it may be gone', async () => {
      const h = await client.start('admin.ping', { n: 2 });
      await expect(h.result({ timeoutMs: 10_000 })).resolves.toBe(2);
      const res = await get(`runs/${h.id}`).expect(404);
      expect(res.body.message).toContain('deleteOnSuccess');
    });
  });

  describe('POST runs/:id/cancel|resume|fork', () => {
    it('cancels a running run (idempotently); 409 for a finished one; 404 for an unknown one', async () => {
      const h = await client.start('admin.slow', { steps: 100, ms: 50 });
      await eventually(async () => (await get(`runs/${h.id}`)).body.status === 'RUNNING', 10_000, 'RUNNING');
      const res = await post(`runs/${h.id}/cancel`).expect(200);
      expect(res.body).toMatchObject({ id: h.id, status: 'CANCELLED', workflowName: 'admin.slow' });
      await post(`runs/${h.id}/cancel`).expect(200);
      const ok = await client.start('admin.sum', { n: 2 });
      await ok.result({ timeoutMs: 10_000 });
      const conflict = await post(`runs/${ok.id}/cancel`).expect(409);
      expect(conflict.body).toMatchObject({ code: 'ILLEGAL_TRANSITION' });
      expect(conflict.body.message).toContain('SUCCEEDED');
      await post('runs/no-such-run/cancel').expect(404);
    });

    it('cancels with compensation: the run shows live progress and cancelRequestedAt, undoes its steps, ends CANCELLED', async () => {
      const h = await client.start('admin.saga', { items: ['x', 'y'], total: 200, ms: 50 });
      const live = await eventually(async () => (await get(`runs/${h.id}`)).body.progress, 10_000, 'progress');
      expect(live.steps[0]).toMatchObject({ seq: 2, step: 'crunch', value: { total: 200, message: expect.stringMatching(/^chunk \d+$/) } });
      expect(typeof live.at).toBe('string');
      const detail = (await get(`runs/${h.id}`)).body;
      expect(detail.steps[0]).toMatchObject({ name: 'reserve', compensation: { by: 'unreserve', args: ['x'] }, compensates: null });
      const res = await post(`runs/${h.id}/cancel`, { compensate: true }).expect(200);
      expect(res.body).toMatchObject({ id: h.id, cancelRequestedAt: expect.any(String) });
      await eventually(async () => (await get(`runs/${h.id}`)).body.status === 'CANCELLED', 10_000, 'CANCELLED');
      const done = (await get(`runs/${h.id}`)).body;
      expect(done.steps.map((x: { name: string; compensates: number | null }) => [x.name, x.compensates])).toEqual([
        ['reserve', null],
        ['reserve', null],
        ['compensate:reserve', 1],
        ['compensate:reserve', 0],
      ]);
      expect(done.steps[2].output).toBe('released y');
      expect(done.progress).toBeNull();
      expect(done.history.map((x: { kind: string }) => x.kind)).toEqual(
        expect.arrayContaining(['cancel_requested', 'compensating', 'compensated', 'cancelled']),
      );
      const listed = (await get(`runs?idPrefix=${h.id}`)).body.items[0];
      expect(listed.cancelRequestedAt).toBe(done.cancelRequestedAt);
    });

    it('rejects bad cancel bodies with 400', async () => {
      const h = await client.start('admin.slow', { steps: 100, ms: 50 });
      for (const body of [{ compensate: 'yes' }, { compensate: 1 }, { compensate: true, extra: 1 }, { now: true }]) {
        const res = await post(`runs/${h.id}/cancel`, body).expect(400);
        expect(res.body.message).toMatch(/compensate|unknown field/);
      }
      await request(a.server).post(`/durable/runs/${h.id}/cancel`).set('content-type', 'application/json').send('[]').expect(400);
      expect((await get(`runs/${h.id}`)).body.cancelRequestedAt).toBeNull();
      await post(`runs/${h.id}/cancel`, {}).expect(200);
    });

    it('resumes a failed run; 409 for a succeeded one; 404 for an unknown one', async () => {
      const h = await client.start('admin.fail', { reason: 'first' });
      await h.result({ timeoutMs: 10_000 }).catch(() => undefined);
      const res = await post(`runs/${h.id}/resume`).expect(200);
      expect(res.body.id).toBe(h.id);
      expect(['PENDING', 'RUNNING', 'FAILED']).toContain(res.body.status);
      await eventually(async () => (await get(`runs/${h.id}`)).body.attempt >= 2, 10_000, 'second attempt');
      const ok = await client.start('admin.sum', { n: 1 });
      await ok.result({ timeoutMs: 10_000 });
      const conflict = await post(`runs/${ok.id}/resume`).expect(409);
      expect(conflict.body.message).toContain('resume');
      await post('runs/no-such-run/resume').expect(404);
    });

    it('forks a run: same workflow and input, checkpoints before fromStep reused', async () => {
      const src = await client.start('admin.sum', { n: 3 });
      await src.result({ timeoutMs: 10_000 });
      const res = await post(`runs/${src.id}/fork`, { fromStep: 1 }).expect(201);
      expect(res.body).toMatchObject({ forkedFrom: src.id, fromStep: 1, copiedSteps: 1, workflowName: 'admin.sum', status: 'PENDING' });
      const fork = client.handle<{ total: number; runId: string }>(res.body.id);
      expect(await fork.result({ timeoutMs: 10_000 })).toEqual({ total: 6, runId: res.body.id });
      const [a0, f0] = await Promise.all([get(`runs/${src.id}`), get(`runs/${res.body.id}`)]);
      expect(f0.body.input).toEqual(a0.body.input);
      expect(f0.body.steps).toHaveLength(3);
      expect(f0.body.steps[0].finishedAt).toBe(a0.body.steps[0].finishedAt);
      expect(f0.body.steps[1].finishedAt).not.toBe(a0.body.steps[1].finishedAt);
      expect(f0.body.history.find((h: { kind: string }) => h.kind === 'forked')?.detail).toEqual({
        from: src.id,
        fromStep: 1,
        actor: 'admin API',
      });
      const fromStart = await post(`runs/${src.id}/fork`, { fromStep: 0 }).expect(201);
      expect(fromStart.body.copiedSteps).toBe(0);
      const fromEnd = await post(`runs/${src.id}/fork`, { fromStep: '3' }).expect(201);
      expect(fromEnd.body.copiedSteps).toBe(3);
    });

    it('rejects bad fork requests', async () => {
      const src = await client.start('admin.sum', { n: 2 });
      await src.result({ timeoutMs: 10_000 });
      const bad: Array<[unknown, string]> = [
        [{ fromStep: 3 }, 'fromStep'],
        [{ fromStep: -1 }, 'fromStep'],
        [{ fromStep: 1.5 }, 'fromStep'],
        [{ fromStep: 'one' }, 'fromStep'],
        [{}, 'fromStep'],
        [{ fromStep: 1, extra: true }, 'extra'],
        [[1], 'fromStep'],
      ];
      for (const [body, param] of bad) {
        const res = await request(a.server)
          .post(`/durable/runs/${src.id}/fork`)
          .send(body as object);
        expect({ body, status: res.status, param: res.body.parameter }).toEqual({ body, status: 400, param });
      }
      await request(a.server).post(`/durable/runs/${src.id}/fork`).expect(400);
      await request(a.server).post(`/durable/runs/${src.id}/fork`).set('Content-Type', 'application/json').send('{"fromStep":').expect(400);
      await post('runs/no-such-run/fork', { fromStep: 0 }).expect(404);
      const unknownWorkflow = await post('runs/L-00004/fork', { fromStep: 0 }).expect(409);
      expect(unknownWorkflow.body.message).toContain('not registered');
    });
  });

  describe('GET stats and workflows', () => {
    it('gives counts by status, a 60-minute series, per workflow and queue', async () => {
      const res = await get('stats').expect(200);
      const s = res.body;
      expect(s.windowMinutes).toBe(60);
      expect(s.totals.perMinute).toHaveLength(60);
      expect(Object.keys(s.totals.counts).sort()).toEqual([...STATUSES].sort());
      const seeded = s.groups.filter((g: { workflow: string }) => ['billing.charge', 'mail.send', 'report.build'].includes(g.workflow));
      expect(seeded.length).toBe(6);
      const active = seeded.reduce(
        (n: number, g: { counts: Record<string, number> }) => n + g.counts.PENDING + g.counts.RUNNING + g.counts.WAITING,
        0,
      );
      const { rows } = await a.pool.query(
        `SELECT count(*)::int AS n FROM durable_runs WHERE status IN ('PENDING','RUNNING','WAITING') AND queue LIKE 'seed-%'`,
      );
      expect(active).toBe(rows[0].n);
      const sum = s.groups.find((g: { workflow: string }) => g.workflow === 'admin.sum');
      expect(sum.queue).toBe('admin-q');
      expect(sum.counts.SUCCEEDED).toBeGreaterThan(0);
      const started = sum.perMinute.reduce((n: number, m: { started: number }) => n + m.started, 0);
      const done = sum.perMinute.reduce((n: number, m: { succeeded: number }) => n + m.succeeded, 0);
      expect(started).toBeGreaterThan(0);
      expect(done).toBe(sum.counts.SUCCEEDED);
      expect(Date.parse(s.totals.perMinute[59].minute)).toBeLessThanOrEqual(Date.parse(s.generatedAt));
      expect(Date.parse(s.totals.perMinute[59].minute) - Date.parse(s.totals.perMinute[0].minute)).toBe(59 * MIN);
      // Seeded PENDING/WAITING runs became due up to two hours ago.
      expect(s.totals.oldestClaimableAgeMs).toBeGreaterThan(100 * MIN);
      const finished = async (minutes: number) =>
        (
          await a.pool.query(
            `SELECT count(*)::int AS n FROM durable_runs WHERE status = 'SUCCEEDED' AND finished_at >= now() - $1 * interval '1 minute'`,
            [minutes],
          )
        ).rows[0].n;
      expect(s.totals.counts.SUCCEEDED).toBe(await finished(60));
      const wide = await get('stats?windowMinutes=10080').expect(200);
      expect(wide.body.totals.counts.SUCCEEDED).toBe(await finished(10080));
      expect(wide.body.totals.counts.SUCCEEDED).toBeGreaterThan(s.totals.counts.SUCCEEDED);
      for (const q of ['windowMinutes=0', 'windowMinutes=10081', 'windowMinutes=abc', 'window=5']) await get(`stats?${q}`).expect(400);
    });

    it('lists registered workflows with their options and queues', async () => {
      const res = await get('workflows').expect(200);
      expect(res.body.workflows.map((w: { name: string }) => w.name)).toEqual([
        'admin.fail',
        'admin.family',
        'admin.fanout',
        'admin.numbers',
        'admin.ping',
        'admin.saga',
        'admin.slow',
        'admin.sum',
        'admin.waiter',
      ]);
      expect(res.body.workflows[4].options).toEqual({ name: 'admin.ping', queue: 'admin-q', deleteOnSuccess: true });
      expect(res.body.workflows[7]).toEqual({
        name: 'admin.sum',
        queue: 'admin-q',
        queueConcurrency: 10,
        className: 'AdminTestWorkflows',
        methodName: 'sum',
        options: expect.objectContaining({ priority: 5, queue: 'admin-q' }),
      });
      expect(res.body.workflows[6].options.timeoutMs).toBe(600_000);
      expect(res.body.queues).toEqual([
        { name: 'admin-q', concurrency: 10 },
        { name: 'admin-slow', concurrency: 10 },
      ]);
      await get('workflows?x=1').expect(400);
    });
  });
});

describe('admin stats: lost leases and claimable backlog (no worker, no sweeper)', () => {
  let a: AdminApp;
  beforeAll(async () => {
    a = await createAdminApp('admin_stats', { worker: false });
  });
  afterAll(() => a.close());

  it('counts RUNNING runs whose lease expired and the age of the oldest due run', async () => {
    await seedRuns(a.pool, { count: 12, prefix: 'S-', spacingMs: MIN, newestAgoMs: 0, leaseMs: -30_000 });
    await a.pool.query(`UPDATE durable_runs SET available_at = now() + interval '1 hour' WHERE id = 'S-00000'`);
    const res = await request(a.server).get('/durable/stats').expect(200);
    expect(res.body.totals.expiredLeases).toBe(2);
    expect(res.body.totals.counts).toMatchObject({ PENDING: 2, RUNNING: 2, WAITING: 2, SUCCEEDED: 2, FAILED: 2, CANCELLED: 2 });
    // S-00000 (PENDING) is not due yet; the oldest due one is S-00002 (WAITING), 9 minutes old.
    expect(res.body.totals.oldestClaimableAgeMs).toBeGreaterThanOrEqual(9 * MIN);
    expect(res.body.totals.oldestClaimableAgeMs).toBeLessThan(10 * MIN);
    const g = res.body.groups.find((x: { workflow: string; queue: string }) => x.workflow === 'billing.charge' && x.queue === 'seed-a');
    expect(g.counts.PENDING).toBe(2);
  });
});

describe('admin API when the engine talks through Prisma only (connection: false)', () => {
  let a: AdminApp;
  beforeAll(async () => {
    a = await createAdminApp('admin_prisma', { connection: false });
  });
  afterAll(() => a.close());

  it('serves every endpoint with the same shapes', async () => {
    await seedRuns(a.pool, { count: 30, prefix: 'P-', steps: 2 });
    await a.pool.query(`INSERT INTO durable_messages (run_id, topic, payload) VALUES ('P-00001', 't', '1')`);
    const list = await request(a.server).get('/durable/runs?limit=10').expect(200);
    expect(list.body.items).toHaveLength(10);
    expect(typeof list.body.items[0].createdAt).toBe('string');
    const page2 = await request(a.server).get(`/durable/runs?limit=10&cursor=${list.body.nextCursor}`).expect(200);
    expect(page2.body.items[0].id).not.toBe(list.body.items[0].id);
    const detail = await request(a.server).get('/durable/runs/P-00001').expect(200);
    expect(detail.body.messages[0]).toMatchObject({ topic: 't', payload: 1, id: expect.any(String) });
    expect(detail.body.steps[0].durationMs).toBe(10);
    await request(a.server).get('/durable/stats').expect(200);
    await request(a.server).get('/durable/workflows').expect(200);
    const client = a.app.get(WorkflowClient);
    const h = await client.start('admin.sum', { n: 2 });
    await h.result({ timeoutMs: 10_000 });
    const fork = await request(a.server).post(`/durable/runs/${h.id}/fork`).send({ fromStep: 1 }).expect(201);
    await client.handle(fork.body.id).result({ timeoutMs: 10_000 });
    await request(a.server).post(`/durable/runs/${h.id}/cancel`).expect(409);
  });
});

describe('admin fork with the run history turned off (history: false)', () => {
  let a: AdminApp;
  beforeAll(async () => {
    a = await createAdminApp('admin_nohistory', { engine: { history: false } });
  });
  afterAll(() => a.close());

  it('writes no history row for the fork', async () => {
    const client = a.app.get(WorkflowClient);
    const h = await client.start('admin.sum', { n: 2 });
    await h.result({ timeoutMs: 10_000 });
    const fork = await request(a.server).post(`/durable/runs/${h.id}/fork`).send({ fromStep: 1 }).expect(201);
    await client.handle(fork.body.id).result({ timeoutMs: 10_000 });
    const { rows } = await a.pool.query(`SELECT count(*)::int AS n FROM durable_run_events`);
    expect(rows[0].n).toBe(0);
  });
});
