import type { DurableEngine } from 'nestjs-durable';
import { clientEngine } from '../support/client-engine.js';
import { DATABASES, openDatabase, type KindDatabase } from '../support/databases.js';
import { eventually, sleep } from '../support/engine-harness.js';
import { WorkerProcess } from '../support/processes.js';

/**
 * Schedules across real worker processes (test/schedules/schedule-worker.ts: a DurableEngine with
 * the scheduler, misfire tolerance 1 s): three processes fire every-second schedules for 9 s (8 s on
 * MariaDB, to keep the suite's time) — exactly one run per slot, no gaps but those a round too late to fire
 * them logged as left out; then all are SIGKILLed for
 * 6 s and restarted — each missed-slot policy does what it says, no slot runs twice; pause and resume
 * are seen by every process. On every database the engine supports.
 */
describe.each(DATABASES)('schedules on %s: three worker processes, SIGKILL, restart', (kind) => {
  let db: KindDatabase;
  let client: DurableEngine;
  const workers: WorkerProcess[] = [];
  const MISFIRE = 1_000;
  const SECONDS = kind === 'postgres' ? 9 : 8;
  /** How long every process is down in the second test. */
  const DOWN_S = 6;
  const q = <T = any>(sql: string, params: unknown[] = []) => db.query<T>(sql, params);
  const pg = kind === 'postgres';
  const spawnAll = async () => {
    workers.push(
      ...(await Promise.all(
        [0, 1, 2].map(() => WorkerProcess.start(db.url, { DURABLE_MISFIRE_MS: String(MISFIRE) }, 'test/schedules/schedule-worker.ts')),
      )),
    );
  };
  /** A scheduled run's slot (ISO text), read from its input on this database. */
  const SLOT = pg ? "input->'scheduledAt'->>'v'" : "JSON_UNQUOTE(JSON_EXTRACT(input, '$.scheduledAt.v'))";
  /** The schedule's runs: slot (ms), insert time (ms), id; oldest slot first. */
  const runs = async (id: string) =>
    (
      await q<{ id: string; slot: string; created: Date }>(
        `SELECT id, ${SLOT} AS slot, created_at AS created
         FROM durable_runs WHERE schedule_id = ? ORDER BY 2`,
        [id],
      )
    ).map((r) => ({ id: r.id, slot: Date.parse(r.slot), created: r.created.getTime() }));
  /** Whether a slot lies in one of the ranges leftOutBy found. */
  const inLeftOut = (ranges: Array<{ from: number; before: number }>, slot: number) =>
    ranges.some((l) => l.from <= slot && slot < l.before);
  /** The ranges of missed slots the workers running now logged as left out by schedule `id`'s catch-up policy. */
  const leftOutBy = (id: string) =>
    [
      ...workers
        .map((w) => w.output)
        .join('\n')
        .matchAll(/schedule "([^"]+)" missed its slots from (\S+) to before (\S+)/g),
    ]
      .filter((m) => m[1] === id)
      .map((m) => ({ from: Date.parse(m[2]), before: Date.parse(m[3]) }));
  const dbNow = async () => (await q<{ now: Date }>(`SELECT ${pg ? 'now()' : 'UTC_TIMESTAMP(3)'} AS now`))[0].now.getTime();

  beforeAll(async () => {
    db = await openDatabase(kind, 'schedproc');
    client = await clientEngine(db.url, db.prisma, ['tick']);
  });
  afterAll(async () => {
    await Promise.all(workers.splice(0).map((w) => w.stop()));
    await client.stop();
    await db.close();
  });

  let killedAt = 0;
  let restartedAt = 0;

  it(`3 processes, every second for ${SECONDS} s: one run per slot (but those a late round logged as left out), each run executed once`, async () => {
    await spawnAll();
    for (const catchUp of ['skip', 'latest', 'all'] as const) {
      // overlap allow: a run still executing (the first ones take seconds while the processes warm up) must not skip a slot here
      await client.schedules.create({
        id: `every-${catchUp}`,
        workflow: 'tick',
        cron: '* * * * * *',
        catchUp,
        catchUpWindowMs: 60_000,
        overlap: 'allow',
      });
    }
    const t0 = await dbNow();
    // Until the last slot counted is at most 2×MISFIRE old (the lateness the bound below allows).
    await sleep(SECONDS * 1_000 + 2 * MISFIRE + 500);
    const counted = await Promise.all(
      ['skip', 'latest', 'all'].map(async (catchUp) => ({
        catchUp,
        r: (await runs(`every-${catchUp}`)).filter((x) => x.slot > t0 + 1_000 && x.slot <= t0 + SECONDS * 1_000),
      })),
    );
    // A worker logs what a plan left out after its fire statement commits: wait for the lines of the runs just read.
    await sleep(1_000);
    for (const { catchUp, r } of counted) {
      // Every slot ran once, but those a scheduler round reached more than MISFIRE late (a loaded machine
      // can stall a round that long) and logged as left out by the policy (skip: the missed slots, latest:
      // all but the latest of them); no slot that ran is in a logged range.
      const leftOut = leftOutBy(`every-${catchUp}`);
      const slots = r.map((x) => x.slot);
      // the whole seconds after t0 + 1 s up to t0 + SECONDS s
      const missing = Array.from({ length: SECONDS - 1 }, (_, k) => t0 - (t0 % 1_000) + (k + 2) * 1_000).filter(
        (slot) => !slots.includes(slot),
      );
      expect(missing.filter((slot) => !inLeftOut(leftOut, slot)).map((x) => new Date(x).toISOString())).toEqual([]);
      expect(r.length + missing.length).toBe(SECONDS - 1);
      expect(r.filter((x) => inLeftOut(leftOut, x.slot)).map((x) => x.id)).toEqual([]);
      for (const x of r) expect(x.id).toBe(`sched:every-${catchUp}:${new Date(x.slot).toISOString()}`);
      // On its slot. A slot planned late enough to count as missed would be absent for skip (the count
      // above) and inserted late for latest and all (this bound). The insert follows the planning,
      // which a loaded machine can delay by a few hundred ms: the bound is twice the tolerance.
      for (const x of r) expect(x.created - x.slot).toBeLessThan(2 * MISFIRE);
    }
    // every run that finished wrote exactly one ledger row; the processes shared the runs
    const ledger = await q<{ run_id: string; n: number }>(
      `SELECT run_id, count(*) AS n FROM test_ledger GROUP BY run_id HAVING count(*) > 1`,
    );
    expect(ledger).toEqual([]);
    const pids = await q<{ n: number }>(`SELECT count(DISTINCT pid) AS n FROM test_ledger`);
    expect(Number(pids[0].n)).toBeGreaterThanOrEqual(2);
  }, 90_000);

  it(`all processes SIGKILLed for ${DOWN_S} s, then restarted: skip, latest and all do what they say, no slot twice`, async () => {
    const live = workers.splice(0);
    for (const w of live) w.kill('SIGKILL');
    await Promise.all(live.map((w) => w.exit()));
    killedAt = await dbNow();
    await sleep(DOWN_S * 1_000);
    restartedAt = await dbNow();
    await spawnAll();
    // the restarted processes' first rounds: two slots after the kill for skip and latest, for all
    // those missed while down and one more
    const afterKill = async (p: string) => (await runs(`every-${p}`)).filter((x) => x.slot > killedAt).length;
    await eventually(
      async () => (await afterKill('skip')) >= 2 && (await afterKill('latest')) >= 2 && (await afterKill('all')) >= DOWN_S + 1,
      30_000,
      'runs after the restart',
    );
    const byPolicy = Object.fromEntries(
      await Promise.all(['skip', 'latest', 'all'].map(async (p) => [p, await runs(`every-${p}`)] as const)),
    );
    // A worker logs what a plan left out after its fire statement has committed: the lines of the runs
    // just read may still be on their way.
    await sleep(1_000);
    for (const [policy, r] of Object.entries(byPolicy)) {
      const before = r.filter((x) => x.slot <= killedAt);
      const after = r.filter((x) => x.slot > killedAt);
      const lastBefore = before[before.length - 1].slot;
      // no slot twice (ids are derived from the slot, so a duplicate would be the same id)
      expect(new Set(r.map((x) => x.slot)).size).toBe(r.length);
      // F: when the first round after the restart fired. It planned from a read shortly before (a
      // loaded machine booting three processes can take seconds between the two): SLACK.
      const F = Math.min(...after.map((x) => x.created));
      const SLACK = 3_000;
      expect(F).toBeGreaterThan(restartedAt);
      const contiguous = (xs: typeof r) => xs.every((x, k) => k === 0 || x.slot - xs[k - 1].slot === 1_000);
      // Skip and latest leave out a slot that a scheduler round reached more than MISFIRE late (a loaded
      // machine can stall a round that long), and the scheduler that applied such a plan logs what it left
      // out: every slot missing from the last run before the kill on (the downtime's, and any a late round
      // skipped after the restart) must be one of those.
      const leftOut = leftOutBy(`every-${policy}`);
      const unexplainedGaps = (xs: typeof r) =>
        xs.flatMap((x, k) => {
          const missing: number[] = [];
          for (let slot = k > 0 ? xs[k - 1].slot + 1_000 : x.slot; slot < x.slot; slot += 1_000) missing.push(slot);
          return missing.filter((slot) => !inLeftOut(leftOut, slot)).map((slot) => new Date(slot).toISOString());
        });
      // and a logged range holds no slot that ran
      expect(r.filter((x) => inLeftOut(leftOut, x.slot)).map((x) => x.id)).toEqual([]);
      if (policy === 'skip') {
        // none of the missed slots ran: every slot run after the restart was at most the misfire tolerance late
        const old = after.filter((x) => x.slot < F - MISFIRE - SLACK).map((x) => ({ slotVsF: x.slot - F, insertedVsF: x.created - F }));
        expect(old).toEqual([]);
        expect(after[0].slot - lastBefore).toBeGreaterThanOrEqual(DOWN_S * 1_000);
        expect(unexplainedGaps([before[before.length - 1], ...after])).toEqual([]);
      } else if (policy === 'latest') {
        // one missed slot ran, the latest: the first run after the restart is a missed slot (late by more than the
        // tolerance), the one right before the first on-time slot, and the runs go on from it without a gap but
        // those a late round made
        expect(after[0].slot).toBeLessThan(F - MISFIRE);
        expect(after[0].slot).toBeGreaterThanOrEqual(F - 2 * MISFIRE - SLACK);
        expect(after[0].slot - lastBefore).toBeGreaterThanOrEqual(DOWN_S * 1_000);
        expect(unexplainedGaps([before[before.length - 1], ...after])).toEqual([]);
      } else {
        // every slot ran: no gap from before the kill to now, the missed ones late
        expect(contiguous(r)).toBe(true);
        expect(after.filter((x) => x.created - x.slot > 2 * MISFIRE).length).toBeGreaterThanOrEqual(DOWN_S - 1);
      }
    }
    // every finished run wrote its ledger row once, also those interrupted by the kill (the schedules keep
    // firing, so runs inserted after the wait below are not finished yet: only SUCCEEDED runs are checked)
    // The runs unfinished now must finish (a moment with nothing in flight may never come while they fire).
    const unfinished = (await q<{ id: string }>(`SELECT id FROM durable_runs WHERE status <> 'SUCCEEDED'`)).map((r) => r.id);
    await eventually(
      async () =>
        !unfinished.length ||
        Number(
          (
            await q<{ n: number }>(
              `SELECT count(*) AS n FROM durable_runs WHERE status <> 'SUCCEEDED' AND id IN (${unfinished.map(() => '?').join(', ')})`,
              unfinished,
            )
          )[0].n,
        ) === 0,
      20_000,
      'the runs unfinished after the restart to finish',
    );
    const twice = await q(`SELECT run_id FROM test_ledger GROUP BY run_id HAVING count(*) > 1`);
    expect(twice).toEqual([]);
    const [{ missing }] = await q<{ missing: number }>(
      `SELECT count(*) AS missing FROM durable_runs r
        WHERE r.status = 'SUCCEEDED' AND NOT EXISTS (SELECT 1 FROM test_ledger l WHERE l.run_id = r.id)`,
    );
    expect(Number(missing)).toBe(0);
  }, 90_000);

  it('pause and resume are seen by every process', async () => {
    await client.schedules.pause('every-all');
    await sleep(300); // a round that read the row before the pause cannot apply its plan (revision changed)
    const count = async () => (await runs('every-all')).length;
    const n = await count();
    await sleep(3_000);
    expect(await count()).toBe(n);
    await client.schedules.resume('every-all');
    await eventually(async () => (await count()) >= n + 2, 5_000, 'slots after resume');
    const r = await runs('every-all');
    expect(r.filter((x) => x.slot > (r[n - 1]?.slot ?? 0)).length).toBeGreaterThanOrEqual(2);
  });

  it('overlap across the processes: with runs (2.5 s) longer than the interval, skip and bufferOne never run two at once', async () => {
    for (const p of ['skip', 'latest', 'all']) await client.schedules.pause(`every-${p}`);
    await client.schedules.create({ id: 'slow-skip', workflow: 'tick', cron: '* * * * * *', overlap: 'skip', input: { ms: 2_500 } });
    await client.schedules.create({ id: 'slow-buffer', workflow: 'tick', cron: '* * * * * *', overlap: 'bufferOne', input: { ms: 2_500 } });
    await sleep(8_500);
    await client.schedules.pause('slow-skip');
    await client.schedules.pause('slow-buffer');
    const intervals = async (id: string) =>
      (
        await q<{ s: Date; f: Date | null; pid: unknown; slot: string }>(
          `SELECT started_at AS s, finished_at AS f, output AS pid, ${SLOT} AS slot
           FROM durable_runs WHERE schedule_id = ? AND started_at IS NOT NULL ORDER BY started_at`,
          [id],
        )
      ).map((r) => ({
        s: r.s.getTime(),
        f: r.f?.getTime() ?? Infinity,
        pid: r.pid == null ? null : Number(r.pid),
        slot: Date.parse(r.slot),
      }));
    for (const id of ['slow-skip', 'slow-buffer']) {
      const iv = await intervals(id);
      expect(iv.length).toBeGreaterThanOrEqual(2);
      for (let i = 1; i < iv.length; i++) expect(iv[i].s).toBeGreaterThanOrEqual(iv[i - 1].f); // never two at once
      if (id === 'slow-buffer') {
        // The slot it ran came due while the previous run was active (kept, where skip drops it), and it
        // started once that run ended: at a process's next round (each second here), not a run's length later.
        for (let i = 1; i < iv.length; i++) {
          expect(iv[i].slot).toBeLessThan(iv[i - 1].f);
          expect(iv[i].s - iv[i - 1].f).toBeLessThan(2_500);
        }
      }
    }
  }, 30_000);
});
