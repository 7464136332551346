import { createTestDatabase, type TestDatabase } from '../support/db.js';
import { DATABASES } from '../support/databases.js';
import { createMariaTestDatabase } from '../support/mariadb.js';
import { chaosSettings } from './chaos-config.js';
import { runChaos } from './chaos-run.js';

/**
 * The chaos run (npm run chaos), CI-sized: 3 worker processes, 60 runs of 5 steps and a child (and 20
 * runs with a concurrency key in a queue with cluster-wide limits, 20 in a rate-limited queue, and 4
 * that start singleton and debounced runs from a step), SIGKILLs
 * (at least 3) with replacements, one zombie frozen past its lease, and one database outage.
 *
 * The outage cuts only the workers' connections, through a TCP proxy: the other test files run
 * at the same time against the same Postgres server, and a real restart would break them. Set
 * DURABLE_CHAOS_PG_RESTART=1 to restart Postgres instead (only when nothing else uses the server).
 *
 * Every 5th run fails on purpose at its end: its steps' compensations run (newest first) under the
 * same chaos, then it is FAILED.
 * On MariaDB the same run and the same judge, 40 runs (with 15 of each flow-control kind).
 * Asserted: the invariants (every run SUCCEEDED or compensated as expected, exactly one ledger row
 * per run and one unledger row per compensated run, every slot of an every-second schedule fired
 * exactly once, re-executed
 * steps within what the kills explain, no zombie write, no crash, reconnects) — not the timings,
 * which a loaded CI machine may stretch (they are printed).
 */
describe.each(DATABASES)('chaos (CI-sized) on %s', (kind) => {
  const mariadb = kind === 'mariadb';
  let db: TestDatabase;
  beforeAll(async () => {
    db = mariadb ? await createMariaTestDatabase('chaos') : await createTestDatabase('chaos');
  });
  afterAll(async () => {
    await db.drop();
  });

  it('nothing lost, nothing doubled: SIGKILLs, a zombie and a database outage', async () => {
    const restart = process.env.DURABLE_CHAOS_PG_RESTART === '1';
    // Sized for a loaded CI machine: 100 runs on PostgreSQL took 70 s after the chaos to finish there.
    const runs = mariadb ? 40 : 60;
    const flowRuns = mariadb ? 15 : 20;
    const settings = chaosSettings({
      database: kind,
      workers: 3,
      runs,
      slotRuns: flowRuns,
      concurrency: 5,
      durationS: 24,
      // More than 12 slots are checked below, however soon the runs are done.
      scheduleMinS: 18,
      killEveryS: 5,
      minKills: 3,
      zombies: 1,
      outage: restart ? 'restart' : 'proxy',
      outageMs: 2_500,
      stepMs: [20, 120],
      settleTimeoutS: 90,
      strictTimings: false,
      progressMs: 0,
    });
    const log: string[] = [];
    const report = await runChaos(settings, db.url, (line) => log.push(line));
    console.log([...log, '', ...report.lines, ...report.warnings.map((w) => `WARNING (timing, not asserted): ${w}`)].join('\n'));
    expect(report.violations).toEqual([]);
    expect(report.figures.statuses).toEqual({ SUCCEEDED: (runs * 4) / 5, FAILED: runs / 5 });
    expect(report.figures.compensated).toBe(runs / 5);
    expect(report.figures.badCompensations).toBe(0);
    expect(report.figures.childStatuses).toEqual({ SUCCEEDED: runs });
    expect(report.figures.kills).toBeGreaterThanOrEqual(3);
    expect(report.figures.zombies).toBe(1);
    expect(report.figures.pgRestarts).toBe(1);
    expect(report.figures.zombieWrites).toBe(0);
    expect(report.figures.ledgerNotOne).toBe(0);
    expect(report.figures.crashes).toBe(0);
    expect(report.figures.scheduleSlots).toBeGreaterThan(12);
    expect(report.figures.scheduleBadSlots).toBe(0);
    // flow control: the limits held across the kills (queue-wide 6, 2 per key), every slot came back
    expect(report.figures.slotStatuses).toEqual({ SUCCEEDED: flowRuns });
    expect(report.figures.slotOverlap).toBeLessThanOrEqual(6);
    expect(report.figures.slotKeyOverlap).toBeLessThanOrEqual(2);
    // rate limit (10 starts per 2 s), singleton and debounce under the same kills
    expect(report.figures.ratedStatuses).toEqual({ SUCCEEDED: flowRuns });
    expect(report.figures.ratedMostInWindow).toBeLessThanOrEqual(10);
    expect(report.figures.singleOverlap).toBeLessThanOrEqual(1);
    expect(report.figures.keyDuplicates).toBe(0);
    expect(report.figures.earlyBounces).toBe(0);
  }, 180_000);
});
