import { Durable } from 'nestjs-durable';
import type { DurableEngine } from 'nestjs-durable';
import { partitionOf, partitionSchema } from '../../libs/durable/src/store/partitions.js';
import { fireSchedules } from '../../libs/durable/src/store/schedule-firing.js';
import { pgSqlClient } from '../../libs/durable/src/store/sql-client.js';
import { createStore } from '../../libs/durable/src/store/store.js';
import { CitusCluster, describeCitus } from '../support/citus-cluster.js';
import { EngineHarness } from '../support/engine-harness.js';

const PARTITIONS = 6;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

interface ScheduledRun {
  id: string;
  status: string;
  slot: string;
  part: number;
  started_at: Date | null;
  finished_at: Date | null;
  created_at: Date;
}

/** Schedules in distributed mode on a real Citus cluster: the schedules are a reference table, each slot's run in its own partition. */
describeCitus('distributed mode on Citus: schedules', () => {
  let cluster: CitusCluster;
  let h: EngineHarness;

  /** The runs of a schedule, read from every partition (with the partition each was found in), oldest slot first. */
  const runsOf = async (schedule: string): Promise<ScheduledRun[]> => {
    const each = Array.from(
      { length: PARTITIONS },
      (_, k) =>
        `SELECT id, status, input->'scheduledAt'->>'v' AS slot, ${k} AS part, started_at, finished_at, created_at
         FROM ${partitionSchema(k)}.durable_runs WHERE schedule_id = $1`,
    );
    return h.query<ScheduledRun>(`${each.join(' UNION ALL ')} ORDER BY slot, id`, [schedule]);
  };

  beforeAll(async () => {
    cluster = await CitusCluster.start();
    h = EngineHarness.on(await cluster.database('durable_citus_schedules', PARTITIONS));
  }, 120_000);
  afterAll(async () => {
    await h?.close();
    await cluster?.stop();
  });

  it('fires a declared every-second schedule once per slot from two engines, its runs in the partitions of their ids', async () => {
    const tick = [
      async () => Durable.step('tock', async () => 1),
      { schedule: { cron: '* * * * * *', catchUp: 'all', overlap: 'allow' } },
    ] as const;
    // catchUp 'all': a slot late under load still runs; overlap 'allow': a slot due while the previous
    // slot's run has not ended yet (under load) starts too, where the default ('skip') leaves it out.
    const engines = [await h.engine({ tick: [...tick] }), await h.engine({ tick: [...tick] })];
    await sleep(6_000);
    for (const e of engines) await e.stop();
    const runs = await runsOf('tick');
    const slots = runs.map((r) => Date.parse(r.slot));
    expect(runs.length).toBeGreaterThanOrEqual(4);
    // one run per slot, no slot left out between the first and the last
    expect(new Set(slots).size).toBe(runs.length);
    for (let i = 1; i < slots.length; i++) expect(slots[i] - slots[i - 1]).toBe(1_000);
    for (const r of runs) expect(r.part).toBe(partitionOf(r.id, PARTITIONS));
    expect(new Set(runs.map((r) => r.part)).size).toBeGreaterThan(1);
    const [row] = await h.query<{ last_run_id: string }>(`SELECT last_run_id FROM durable_schedules WHERE id = 'tick'`);
    expect(row.last_run_id).toBe(runs[runs.length - 1].id);
  });

  it('bufferOne reads the last run in its partition: one slot waits, starts when the active run ends, never beside it', async () => {
    const engine: DurableEngine = await h.engine({
      slow: async (input: { input: { ms: number } }) => Durable.step('work', async () => sleep(input.input.ms).then(() => 'done')),
    });
    await engine.schedules.create({ id: 'buffered', workflow: 'slow', cron: '* * * * * *', overlap: 'bufferOne', input: { ms: 2_500 } });
    await engine.schedules.create({ id: 'skipping', workflow: 'slow', cron: '* * * * * *', overlap: 'skip', input: { ms: 2_500 } });
    // Two or three runs of 2.5 s each: a first run that starts late on a loaded machine still leaves room for the second.
    await sleep(7_000);
    const view = (await engine.schedules.get('buffered'))!;
    await engine.schedules.pause('buffered');
    await engine.schedules.pause('skipping');
    for (const id of ['buffered', 'skipping']) {
      const started = (await runsOf(id)).filter((r) => r.started_at !== null).sort((a, b) => +a.started_at! - +b.started_at!);
      expect(started.length).toBeGreaterThanOrEqual(2);
      expect(started.length).toBeLessThanOrEqual(3);
      for (let i = 1; i < started.length; i++) {
        const gap = started[i].started_at!.getTime() - started[i - 1].finished_at!.getTime();
        expect(gap).toBeGreaterThanOrEqual(0); // never two at once
        if (id === 'buffered') {
          // The slot it ran was due while the previous run was active (kept, not skipped), and it started
          // once that run ended: at the scheduler's next round (each second here), not a run's length later.
          expect(Date.parse(started[i].slot)).toBeLessThan(started[i - 1].finished_at!.getTime());
          expect(gap).toBeLessThan(2_500);
        }
      }
    }
    // The schedule's view reads its last run's status from the run's partition.
    // Read again after it, the run is where the view saw it or further on (it may have ended since).
    const last = (await runsOf('buffered')).find((r) => r.id === view.lastRunId)!;
    const lifecycle = ['PENDING', 'RUNNING', 'SUCCEEDED'];
    expect(lifecycle).toContain(view.lastRunStatus);
    expect(lifecycle.indexOf(last.status)).toBeGreaterThanOrEqual(lifecycle.indexOf(view.lastRunStatus!));
    // The runs of a schedule, newest first, merged from every partition.
    const all = (await runsOf('skipping')).sort((a, b) => +b.created_at - +a.created_at || (a.id < b.id ? 1 : -1));
    expect((await engine.schedules.runs('skipping', { limit: 2 })).map((r) => r.id)).toEqual(all.slice(0, 2).map((r) => r.id));
  }, 30_000);

  it('trigger starts a run at once in its partition; of two instances firing one plan at once, one applies it', async () => {
    const engine = await h.engine({ quick: async () => Durable.step('one', async () => 'ok') });
    await engine.schedules.create({ id: 'manual', workflow: 'quick', cron: '0 0 1 1 *' });
    const t = await engine.schedules.trigger('manual');
    expect(t.outcome).toBe('started');
    expect(await engine.handle(t.runId).result({ timeoutMs: 20_000 })).toBe('ok');
    const runs = await runsOf('manual');
    expect(runs.map((r) => [r.id, r.part, r.status])).toEqual([[t.runId, partitionOf(t.runId, PARTITIONS), 'SUCCEEDED']]);
    const history = await h.query<{ kind: string }>(
      `SELECT kind FROM ${partitionSchema(partitionOf(t.runId, PARTITIONS))}.durable_run_events WHERE run_id = $1 ORDER BY id LIMIT 1`,
      [t.runId],
    );
    expect(history).toEqual([{ kind: 'created' }]);
    // Two instances firing one plan at once: one of them applies it, the slot has one run.
    const [{ revision }] = await h.query<{ revision: number }>(`SELECT revision FROM durable_schedules WHERE id = 'manual'`);
    const slot = Date.now() - 1_000;
    const plan = {
      id: 'manual',
      revision,
      nextFireAt: Date.now() + 3_600_000,
      fireAt: slot,
      queue: 'default',
      priority: 0,
      timeoutMs: null,
    };
    const store = () => createStore(pgSqlClient(h.pool, { prepared: false }), { history: true, layout: { partitions: PARTITIONS } });
    const fired = await Promise.all(
      [store(), store()].map((s) =>
        fireSchedules(s, [{ ...plan, candidates: [{ slot, runId: 'sched:manual:contested', manual: false }] }], null),
      ),
    );
    expect(fired.map((f) => JSON.stringify(f.get('manual') ?? 'passed over')).sort()).toEqual([
      '"passed over"',
      JSON.stringify([{ runId: 'sched:manual:contested', fate: 'run' }]),
    ]);
    expect((await runsOf('manual')).filter((r) => r.id === 'sched:manual:contested')).toHaveLength(1);
  });
});
