import { CitusCluster, describeCitus } from '../support/citus-cluster.js';
import { chaosSettings } from './chaos-config.js';
import { ShardMoveOutage } from './chaos-citus.js';
import { runChaos } from './chaos-run.js';

const RUNS = 60;
const PARTITIONS = 6;
const FLOW_RUNS = 20;

/**
 * The chaos run on Citus (npm run chaos -- --citus), CI-sized: a cluster of its own (a coordinator
 * and two worker nodes), a database in distributed mode over 6 partitions, 3 worker processes on the
 * coordinator, 60 runs of 5 steps and a child (every 5th failing on purpose and compensating), an
 * every-second schedule declared by every worker, SIGKILLs (at least 2) with replacements, one zombie
 * frozen past its lease, and, as the outage, the busiest partition moved to the other worker node with
 * its runs in flight; runs of a queue with cluster-wide limits, of a rate-limited queue, and singleton
 * and debounced starts, as in the single-server chaos.
 * Asserted: the judge's invariants (every run terminal as expected, each ledger row exactly once, the
 * children's messages once, no zombie write, each schedule slot once, re-executions within what the
 * kills explain, no crash),
 * read across the partitions — not the timings, which a loaded CI machine may stretch (printed).
 */
describeCitus('chaos (CI-sized) on Citus: SIGKILLs, a zombie and a partition moved mid-run', () => {
  let cluster: CitusCluster;
  let url: string;

  beforeAll(async () => {
    cluster = await CitusCluster.start();
    url = (await cluster.database('durable_citus_chaos', PARTITIONS)).url;
  }, 120_000);
  afterAll(async () => {
    await cluster?.stop();
  });

  it('nothing lost, nothing doubled', async () => {
    const settings = chaosSettings({
      database: 'citus',
      partitions: PARTITIONS,
      workers: 3,
      runs: RUNS,
      slotRuns: FLOW_RUNS,
      concurrency: 5,
      durationS: 22,
      killEveryS: 5,
      minKills: 2,
      zombies: 1,
      scheduleMinS: 18,
      stepMs: [20, 120],
      settleTimeoutS: 60,
      strictTimings: false,
      progressMs: 0,
    });
    const log: string[] = [];
    const move = new ShardMoveOutage(cluster, url, PARTITIONS, (line) => log.push(line));
    const report = await runChaos(settings, url, (line) => log.push(line), undefined, move);
    console.log([...log, '', ...report.lines, ...report.warnings.map((w) => `WARNING (timing, not asserted): ${w}`)].join('\n'));
    if (report.violations.length) {
      console.log([cluster.coordinator, ...cluster.workers].map((n) => `server log :${n.port}:\n${cluster.logTail(n, 20)}`).join('\n'));
    }
    expect(report.violations).toEqual([]);
    expect(report.figures.statuses).toEqual({ SUCCEEDED: (RUNS * 4) / 5, FAILED: RUNS / 5 });
    expect(report.figures.compensated).toBe(RUNS / 5);
    expect(report.figures.badCompensations).toBe(0);
    expect(report.figures.childStatuses).toEqual({ SUCCEEDED: RUNS });
    expect(report.figures.kills).toBeGreaterThanOrEqual(2);
    expect(report.figures.zombies).toBe(1);
    expect(report.figures.zombieWrites).toBe(0);
    expect(report.figures.ledgerNotOne).toBe(0);
    expect(report.figures.crashes).toBe(0);
    expect(report.figures.scheduleSlots).toBeGreaterThan(12);
    expect(report.figures.scheduleBadSlots).toBe(0);
    // flow control across partitions: the queue-wide limit (6) and the per-key one (2) held under the kills
    expect(report.figures.slotStatuses).toEqual({ SUCCEEDED: FLOW_RUNS });
    expect(report.figures.slotOverlap).toBeLessThanOrEqual(6);
    expect(report.figures.slotKeyOverlap).toBeLessThanOrEqual(2);
    // rate limit (10 starts per 2 s), singleton and debounce, each key in its partition
    expect(report.figures.ratedStatuses).toEqual({ SUCCEEDED: FLOW_RUNS });
    expect(report.figures.ratedMostInWindow).toBeLessThanOrEqual(10);
    expect(report.figures.singleOverlap).toBeLessThanOrEqual(1);
    expect(report.figures.keyDuplicates).toBe(0);
    expect(report.figures.earlyBounces).toBe(0);
    // The shard move happened, with runs of its partition in flight, and the partition is on the other node now.
    const moved = move.result();
    expect(moved).not.toBeNull();
    expect(moved!.portAfter).toBe(moved!.toPort);
    expect(moved!.portAfter).not.toBe(moved!.fromPort);
    expect(moved!.unfinishedAtStart).toBeGreaterThan(0);
  }, 180_000);
});
