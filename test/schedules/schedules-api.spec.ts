import {
  DurableEngine,
  ScheduleConflictError,
  ScheduleNotFoundError,
  WorkflowRegistry,
  type ScheduledInput,
  type WorkflowOptions,
} from 'nestjs-durable';
import { DATABASES, openDatabase, type DatabaseKind, type KindDatabase } from '../support/databases.js';
import { eventually, sleep, STEADY, type WorkflowFn } from '../support/engine-harness.js';

/**
 * Engines without Nest on a fresh database of one kind; `query` takes `?` placeholders on both, and
 * reads JSON columns back as values (MariaDB's JSON is text) and times as Dates.
 */
class Harness {
  private readonly engines: DurableEngine[] = [];
  private constructor(readonly db: KindDatabase) {}

  static async create(kind: DatabaseKind, label: string): Promise<Harness> {
    return new Harness(await openDatabase(kind, label));
  }

  async engine(workflows: Record<string, WorkflowFn | [WorkflowFn, WorkflowOptions]>): Promise<DurableEngine> {
    const registry = new WorkflowRegistry();
    for (const [name, w] of Object.entries(workflows)) {
      const [fn, opts] = Array.isArray(w) ? w : [w, {}];
      registry.register({ name, queue: opts.queue ?? 'default', options: opts, run: fn });
    }
    const engine = new DurableEngine({ registry, connection: this.db.url, prisma: this.db.prisma as never, options: STEADY });
    this.engines.push(engine);
    await engine.start();
    return engine;
  }

  async query<T = any>(sql: string, params: unknown[] = []): Promise<T[]> {
    const rows = await this.db.query<Record<string, unknown>>(sql, params);
    for (const r of rows) if (typeof r.input === 'string') r.input = JSON.parse(r.input);
    return rows as T[];
  }

  async close(): Promise<void> {
    for (const e of this.engines) await e.stop().catch(() => {});
    await this.db.close();
  }
}

/**
 * Schedules in one process (engine without Nest), on each database: the declared schedule's sync, the runtime API,
 * slots firing on time with derived run ids, overlap policies with a run that outlasts its
 * interval. Multi-process exactly-once and restarts: schedules-processes.e2e-spec.ts.
 */
describe.each(DATABASES)('schedules on %s: API and policies in one process', (kind) => {
  let h: Harness;
  let engine: DurableEngine;
  const seen: Array<ScheduledInput<{ tenant: string }>> = [];
  const q = <T = any>(sql: string, params: unknown[] = []) => h.query<T>(sql, params);

  beforeAll(async () => {
    h = await Harness.create(kind, 'sched_api');
    engine = await h.engine({
      tick: async (input: ScheduledInput<{ tenant: string }>) => {
        seen.push(input);
        return input.scheduledAt.toISOString();
      },
      slow: async (input: ScheduledInput<{ ms: number }>) => {
        await sleep(input.input!.ms);
        return 'done';
      },
      nightly: [async () => 'ok', { schedule: { cron: '0 3 * * *', timeZone: 'Europe/Paris', overlap: 'allow' } }],
    });
  });
  afterAll(async () => {
    await h.close();
  });

  it('syncs a declared schedule at start: id = workflow name, next fire at 03:00 Paris time', async () => {
    const s = (await engine.schedules.get('nightly'))!;
    expect(s).toMatchObject({
      source: 'declared',
      workflowName: 'nightly',
      cron: '0 3 * * *',
      timeZone: 'Europe/Paris',
      overlap: 'allow',
      catchUp: 'latest',
      paused: false,
    });
    const local = s.nextFireAt.toLocaleString('sv', { timeZone: 'Europe/Paris' });
    expect(local.endsWith('03:00:00')).toBe(true);
    expect(s.nextFireAt.getTime()).toBeGreaterThan(Date.now());
    expect(s.nextFireAt.getTime() - Date.now()).toBeLessThanOrEqual(25 * 3600_000);
    await expect(engine.schedules.update('nightly', { cron: '0 4 * * *' })).rejects.toBeInstanceOf(ScheduleConflictError);
  });

  it('a runtime schedule every second starts one run per slot, id and input derived from the slot', async () => {
    const created = await engine.schedules.create({
      id: 'tenant-a',
      workflow: 'tick',
      cron: '* * * * * *',
      overlap: 'allow',
      input: { tenant: 'a' },
    });
    expect(created).toMatchObject({ id: 'tenant-a', source: 'runtime', paused: false, input: { tenant: 'a' } });
    // idempotent create with the same definition; another definition is a conflict
    await expect(
      engine.schedules.create({ id: 'tenant-a', workflow: 'tick', cron: '* * * * * *', overlap: 'allow', input: { tenant: 'a' } }),
    ).resolves.toMatchObject({ id: 'tenant-a' });
    await expect(engine.schedules.create({ id: 'tenant-a', workflow: 'tick', cron: '*/2 * * * * *' })).rejects.toBeInstanceOf(
      ScheduleConflictError,
    );
    await eventually(async () => seen.filter((s) => s.scheduleId === 'tenant-a').length >= 3, 10_000, '3 slots');
    const runs = await q<{ id: string; schedule_id: string; input: any; created_at: Date; available_at: Date }>(
      `SELECT id, schedule_id, input, created_at, available_at FROM durable_runs WHERE schedule_id = 'tenant-a' ORDER BY id`,
    );
    for (const r of runs) {
      const slot = r.input.scheduledAt.v as string;
      expect(r.id).toBe(`sched:tenant-a:${slot}`);
      expect(slot.endsWith('.000Z')).toBe(true);
      expect(r.input).toMatchObject({ scheduleId: 'tenant-a', manual: false, input: { tenant: 'a' } });
      // fired on its slot: inserted after it (a slot counts as due within the millisecond before it,
      // the resolution of the JS timers that wait for it), well within the misfire tolerance (5 s;
      // a loaded machine delays the insert by a second or more), and never claimable before it
      const lag = r.created_at.getTime() - Date.parse(slot);
      expect(lag).toBeGreaterThanOrEqual(-1);
      expect(lag).toBeLessThan(3_000);
      expect(r.available_at.getTime()).toBeGreaterThanOrEqual(Date.parse(slot));
    }
    const slots = runs.map((r) => Date.parse(r.input.scheduledAt.v));
    for (let i = 1; i < slots.length; i++) expect(slots[i] - slots[i - 1]).toBe(1_000);
    const view = (await engine.schedules.get('tenant-a'))!;
    expect(view.lastRunId).toBe(runs[runs.length - 1].id);
    expect((await engine.schedules.runs('tenant-a', { limit: 2 })).map((r) => r.id)).toEqual(
      runs
        .slice(-2)
        .map((r) => r.id)
        .reverse(),
    );
  });

  it('pause stops the slots (kept by the row), resume restarts from now, trigger runs at once', async () => {
    const paused = await engine.schedules.pause('tenant-a');
    expect(paused.paused).toBe(true);
    const count = async () =>
      Number((await q<{ n: number }>(`SELECT count(*) AS n FROM durable_runs WHERE schedule_id = 'tenant-a'`))[0].n);
    const before = await count();
    await sleep(2_200);
    expect(await count()).toBe(before);
    const t = await engine.schedules.trigger('tenant-a');
    expect(t.outcome).toBe('started');
    expect(t.runId).toMatch(/^sched:tenant-a:.*:manual$/);
    const out = await engine.handle(t.runId).result({ timeoutMs: 5_000 });
    expect(typeof out).toBe('string');
    expect(await count()).toBe(before + 1);
    const resumedAt = Date.now();
    const resumed = await engine.schedules.resume('tenant-a');
    expect(resumed.paused).toBe(false);
    // From the moment of the resume (not of its answer, which a loaded machine may delay past a slot).
    expect(resumed.nextFireAt.getTime()).toBeGreaterThan(resumedAt - 1_000);
    await eventually(async () => (await count()) >= before + 3, 10_000, 'slots after resume');
    expect(await engine.schedules.delete('tenant-a')).toBe(true);
    expect(await engine.schedules.delete('tenant-a')).toBe(false);
    await expect(engine.schedules.pause('tenant-a')).rejects.toBeInstanceOf(ScheduleNotFoundError);
    const n = await count();
    await sleep(1_500);
    expect(await count()).toBe(n);
  });

  it('lists schedules by id, filtered by workflow and paused state, paged with after', async () => {
    for (const id of ['p-1', 'p-2', 'p-3'])
      await engine.schedules.create({ id, workflow: 'tick', cron: '0 0 1 1 *', paused: id === 'p-2' });
    expect((await engine.schedules.list({ workflow: 'tick' })).map((s) => s.id)).toEqual(['p-1', 'p-2', 'p-3']);
    expect((await engine.schedules.list({ workflow: 'tick', paused: true })).map((s) => s.id)).toEqual(['p-2']);
    expect((await engine.schedules.list({ after: 'p-1', limit: 1 })).map((s) => s.id)).toEqual(['p-2']);
    const updated = await engine.schedules.update('p-3', { cron: '0 0 2 1 *', overlap: 'bufferOne', input: { tenant: 'x' } });
    expect(updated).toMatchObject({ cron: '0 0 2 1 *', overlap: 'bufferOne', input: { tenant: 'x' } });
    expect(updated.nextFireAt.getUTCDate()).toBe(2);
  });

  it('overlap policies with runs (2.5 s) that outlast their interval (1 s): skip, allow, bufferOne', async () => {
    const ids = { skip: 'ov-skip', allow: 'ov-allow', bufferOne: 'ov-buf' } as const;
    for (const [overlap, id] of Object.entries(ids)) {
      await engine.schedules.create({ id, workflow: 'slow', cron: '* * * * * *', overlap: overlap as 'skip', input: { ms: 2_500 } });
    }
    // Six or seven slots: allow starts each (five counted, so a slot planned late still leaves a margin).
    await sleep(6_100);
    for (const id of Object.values(ids)) await engine.schedules.pause(id);
    const runsOf = (id: string) =>
      q<{ id: string; started_at: Date | null; finished_at: Date | null }>(
        `SELECT id, started_at, finished_at FROM durable_runs WHERE schedule_id = ? AND started_at IS NOT NULL ORDER BY started_at`,
        [id],
      );
    const maxOverlap = (runs: Array<{ started_at: Date | null; finished_at: Date | null }>) => {
      const iv = runs.map((r) => [r.started_at!.getTime(), (r.finished_at ?? new Date(8.64e15)).getTime()]);
      return Math.max(0, ...iv.map(([s]) => iv.filter(([a, b]) => a <= s && s < b).length));
    };
    // skip: a slot while the previous run is active starts nothing
    const skip = await runsOf(ids.skip);
    expect(maxOverlap(skip)).toBe(1);
    expect(skip.length).toBeGreaterThanOrEqual(2);
    expect(skip.length).toBeLessThanOrEqual(3);
    // allow: every slot starts; runs overlap
    const allow = await runsOf(ids.allow);
    expect(allow.length).toBeGreaterThanOrEqual(5);
    expect(maxOverlap(allow)).toBeGreaterThanOrEqual(2);
    // bufferOne: one slot waits and starts as soon as the active run ends (no overlap, no idle gap)
    const buf = await runsOf(ids.bufferOne);
    expect(maxOverlap(buf)).toBe(1);
    expect(buf.length).toBeGreaterThanOrEqual(2);
    for (let i = 1; i < buf.length; i++) {
      const gap = buf[i].started_at!.getTime() - buf[i - 1].finished_at!.getTime();
      expect(gap).toBeGreaterThanOrEqual(0);
      // The slot it ran (in its id) came due while the previous run was active: kept, where skip drops
      // it. It starts at the scheduler's next round (each second here), not a run's length later.
      expect(Date.parse(buf[i].id.slice(`sched:${ids.bufferOne}:`.length))).toBeLessThan(buf[i - 1].finished_at!.getTime());
      expect(gap).toBeLessThan(2_500);
    }
  });

  it('jitter: each run becomes claimable at a random moment within jitterMs after its slot', async () => {
    await engine.schedules.create({
      id: 'jittery',
      workflow: 'tick',
      cron: '* * * * * *',
      jitterMs: 800,
      overlap: 'allow',
      input: { tenant: 'j' },
    });
    await eventually(
      async () => (await q(`SELECT 1 FROM durable_runs WHERE schedule_id = 'jittery' AND status = 'SUCCEEDED'`)).length >= 6,
      15_000,
      '6 jittered runs',
    );
    await engine.schedules.pause('jittery');
    const rows = (
      await q<{ input: any; available_at: Date; created_at: Date; started_at: Date; order_at: Date }>(
        `SELECT input, available_at, created_at, started_at, order_at FROM durable_runs WHERE schedule_id = 'jittery' AND status = 'SUCCEEDED'`,
      )
    ).map((r) => {
      const slot = Date.parse(r.input.scheduledAt.v);
      return {
        delay: r.available_at.getTime() - slot,
        late: r.created_at.getTime() - slot,
        started: r.started_at.getTime() - r.available_at.getTime(),
        placed: r.available_at.getTime() - r.order_at.getTime(),
      };
    });
    // its place in the queue is its jittered time, as a start with a runAt (then 1 ms earlier: its claim)
    expect(rows.map((r) => Number(r.placed))).toEqual(rows.map(() => 1));
    const delays = rows.map((r) => Number(r.delay));
    for (const r of rows) {
      expect(Number(r.delay)).toBeGreaterThanOrEqual(0);
      // within the jitter; a slot fired later than that (a loaded machine) is due when it is fired, not in the past
      expect(Number(r.delay)).toBeLessThanOrEqual(Math.max(800, Number(r.late) + 1));
    }
    expect(new Set(delays.map((d) => Math.round(d / 50))).size).toBeGreaterThan(1); // spread, not one fixed delay
    for (const r of rows) expect(Number(r.started)).toBeGreaterThanOrEqual(-1); // none started before its jittered time
  });
});

describe.each(DATABASES)('schedules on %s: the boot-time sync of declared schedules', (kind) => {
  let h: Harness;
  beforeAll(async () => {
    h = await Harness.create(kind, 'sched_sync');
  });
  afterAll(async () => {
    await h.close();
  });
  const report = async () => null;

  it('creates, updates on a changed decorator (keeping a runtime pause), deletes when no longer declared', async () => {
    const first = await h.engine({ report: [report, { schedule: { cron: '0 6 * * *', timeZone: 'Europe/Paris' } }] });
    expect((await first.schedules.get('report'))!).toMatchObject({ source: 'declared', cron: '0 6 * * *', paused: false });
    await first.schedules.pause('report');
    await first.stop();

    // a new deployment: another time, another policy; the pause made at runtime stays
    const second = await h.engine({
      report: [report, { schedule: { cron: '0 7 * * *', timeZone: 'Europe/Paris', overlap: 'bufferOne' } }],
    });
    const s = (await second.schedules.get('report'))!;
    expect(s).toMatchObject({ cron: '0 7 * * *', overlap: 'bufferOne', paused: true });
    expect(new Intl.DateTimeFormat('en-GB', { timeZone: 'Europe/Paris', hour: '2-digit', hourCycle: 'h23' }).format(s.nextFireAt)).toBe(
      '07',
    );
    // same definition again: nothing written (the revision does not move)
    const revision = async () =>
      Number((await h.query<{ revision: number }>(`SELECT revision FROM durable_schedules WHERE id = 'report'`))[0].revision);
    const before = await revision();
    await second.stop();
    const third = await h.engine({ report: [report, { schedule: { cron: '0 7 * * *', timeZone: 'Europe/Paris', overlap: 'bufferOne' } }] });
    expect(await revision()).toBe(before);
    await third.stop();

    // the workflow no longer declares one: its declared schedule goes; a runtime schedule of it stays
    const fourth = await h.engine({ report });
    expect(await fourth.schedules.get('report')).toBeNull();
    await fourth.schedules.create({ id: 'report', workflow: 'report', cron: '@daily' });
    await fourth.stop();
    // a declared schedule whose id a runtime schedule holds: a typed boot error
    await expect(h.engine({ report: [report, { schedule: { cron: '0 6 * * *' } }] })).rejects.toThrow(/runtime schedule .* already uses/);
  });
});
