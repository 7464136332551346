import { undoRuns, type ChaosSettings } from './chaos-config.js';
import type { ChaosEvent } from './chaos-driver.js';
import type { ChaosFacts } from './chaos-facts.js';
import type { Fleet } from './chaos-fleet.js';
import { judgeSlots, type SlotFacts } from './chaos-slots.js';
import { judgeKeys, type KeyFacts } from './chaos-keys.js';
import { judgeFailover, type FailoverFacts } from './chaos-failover.js';
import { judgeShardMove, type ShardMoveFacts } from './chaos-citus.js';
import {
  inFlightBudget,
  judgeDuplicates,
  LEASE_LOST_LIVE,
  outageLogLines,
  ownerlessPeriods,
  percentile,
  recoveries,
  unrecovered,
  zombieWrites,
  type Recovery,
} from './chaos-checks.js';

/** What happened in a chaos run, as the driver saw it, plus the database's account. */
export interface ChaosOutcome {
  settings: ChaosSettings;
  events: ChaosEvent[];
  fleet: Fleet;
  facts: ChaosFacts;
  /** The flow-control runs' facts (chaos-slots.ts). */
  slots: SlotFacts;
  /** Rate limit, singleton and debounce runs' facts (chaos-keys.ts). */
  keys: KeyFacts;
  startedAt: number;
  chaosEndedAt: number;
  /** Every run finished before settleTimeoutS. */
  settled: boolean;
  settledAt: number;
  /** Workers that did not exit 0 on SIGTERM at the end. */
  stopFailures: Array<{ pid: number; code: number | string | null }>;
  /** The failover's facts, when the outage was one (chaos-failover.ts). */
  failover?: FailoverFacts;
  /** The shard move's facts, when the outage was one (Citus, chaos-citus.ts); null if it never happened. */
  shardMove?: ShardMoveFacts | null;
}

export interface ChaosFigures {
  runs: number;
  statuses: Record<string, number>;
  childStatuses: Record<string, number>;
  kills: number;
  zombies: number;
  pgRestarts: number;
  ledgerNotOne: number;
  /** Runs that failed on purpose and compensated as expected, and those that did not. */
  compensated: number;
  badCompensations: number;
  extraExecutions: number;
  unexplainedExecutions: number;
  zombieWrites: number;
  stuck: number;
  recoveryP50Ms: number;
  recoveryMaxMs: number;
  crashes: number;
  /** Slots of the schedule chaos.tick from its first to its last run, and those without exactly one SUCCEEDED run with one ledger row. */
  scheduleSlots: number;
  scheduleBadSlots: number;
  /** Flow control: the flow-control runs by status, and the most executing at once, queue-wide and per key. */
  slotStatuses: Record<string, number>;
  slotOverlap: number;
  slotKeyOverlap: number;
  /** Rate limit, singleton, debounce (chaos-keys.ts): the most first starts in one window, the most executions of one dedupe key at once, snapshots with two runs of a key, debounced runs started early. */
  ratedStatuses: Record<string, number>;
  ratedMostInWindow: number;
  singleOverlap: number;
  keyDuplicates: number;
  earlyBounces: number;
}

export interface ChaosReport {
  lines: string[];
  /** Broken guarantees: the run fails. */
  violations: string[];
  /** Timing problems when settings.strictTimings is false (reported, not failed). */
  warnings: string[];
  figures: ChaosFigures;
}

const OUTAGE_TEXT: Record<ChaosSettings['outage'], string> = {
  restart: 'the database server restarted',
  proxy: "the workers' connections cut (proxy)",
  failover: 'the primary killed and its standby promoted',
  'shard-move': 'a partition moved to the other worker node',
  none: 'no outage',
};

const sec = (ms: number | null) => (ms === null ? 'never' : `${(ms / 1000).toFixed(2)} s`);

export function buildReport(o: ChaosOutcome): ChaosReport {
  const { settings: s, events, facts, fleet } = o;
  const lines: string[] = [];
  const violations: string[] = [];
  const warnings: string[] = [];
  const timing = (msg: string) => (s.strictTimings ? violations : warnings).push(msg);
  const count = (k: ChaosEvent['kind']) => events.filter((e) => e.kind === k).length;
  const restart = events.find((e) => e.kind === 'pg-restart');

  lines.push(
    `chaos: ${s.workers} workers × concurrency ${s.concurrency}, ${s.runs} runs of 5 steps and a child that answers a message; lease ${s.leaseMs} ms, sweep ${s.sweepMs} ms; ` +
      `chaos for ${sec(o.chaosEndedAt - o.startedAt)}, all done after ${sec(o.settledAt - o.startedAt)}`,
  );
  lines.push(
    `done to it: ${count('kill')} SIGKILLs (+ replacements), ${count('freeze')} zombie(s) frozen ${s.zombieStopMs} ms, ` +
      (restart ? `${OUTAGE_TEXT[s.outage]} (back after ${sec((restart.end ?? o.settledAt) - restart.at)})` : 'no database outage'),
  );

  // 1. Runs by status (every undoEvery-th run fails on purpose, after compensating).
  const undo = undoRuns(s);
  const total = Object.values(facts.statuses).reduce((a, b) => a + b, 0);
  const statusText = Object.entries(facts.statuses)
    .map(([k, v]) => `${k} ${v}`)
    .join(', ');
  lines.push(
    `runs by status: ${statusText} (expected SUCCEEDED ${s.runs - undo}${undo ? `, FAILED ${undo} on purpose after compensating` : ''})`,
  );
  if ((facts.statuses.SUCCEEDED ?? 0) !== s.runs - undo || (facts.statuses.FAILED ?? 0) !== undo || total !== s.runs) {
    violations.push(`runs not all SUCCEEDED: ${statusText}${o.settled ? '' : ` (not settled within ${s.settleTimeoutS} s)`}`);
    for (const f of facts.failed) lines.push(`  FAILED ${f.id}: ${f.error}`);
    for (const u of facts.unfinished.slice(0, 10)) lines.push(`  unfinished ${u.id}: ${u.status} (lease ${u.owner ?? '-'})`);
  }
  const childText =
    Object.entries(facts.childStatuses)
      .map(([k, v]) => `${k} ${v}`)
      .join(', ') || 'none';
  lines.push(
    `children by status: ${childText} (expected SUCCEEDED ${s.runs}); children that got their message exactly once and answered it: ${(facts.childStatuses.SUCCEEDED ?? 0) - facts.badMessages.length}`,
  );
  if ((facts.childStatuses.SUCCEEDED ?? 0) !== (facts.statuses.SUCCEEDED ?? 0) + facts.compensated)
    violations.push(`children not all SUCCEEDED: ${childText}`);
  if (facts.badReplies.length)
    violations.push(
      `${facts.badReplies.length} run(s) without exactly one child answering their id, e.g. ${JSON.stringify(facts.badReplies.slice(0, 3))}`,
    );
  lines.push(`streams: SUCCEEDED runs whose stream of step names is not exactly s0, s1, s2: ${facts.badStreams.length}`);
  if (facts.badStreams.length)
    violations.push(
      `${facts.badStreams.length} run(s) whose stream "steps" lost or repeated a chunk, e.g. ${JSON.stringify(facts.badStreams.slice(0, 3))}`,
    );
  if (facts.badMessages.length)
    violations.push(
      `${facts.badMessages.length} child(ren) without exactly one message consumed once, e.g. ${JSON.stringify(facts.badMessages.slice(0, 3))}`,
    );
  if (facts.incompleteSucceeded.length) {
    violations.push(
      `${facts.incompleteSucceeded.length} SUCCEEDED run(s) without all their checkpoints/executions, e.g. ${facts.incompleteSucceeded[0]}`,
    );
  }

  // 2. Ledger rows per (run, step): the transactional step commits exactly once.
  const ledgerText = facts.ledgerCounts.map((c) => `${c.n} row(s): ${c.runs} ${c.status}`).join(', ');
  const ledgerNotOne = facts.ledgerCounts
    .filter((c) => c.n > 1 || ((c.status === 'SUCCEEDED' || c.status === 'FAILED') && c.n !== 1))
    .reduce((a, c) => a + c.runs, 0);
  lines.push(`ledger rows per (run, ledger step): ${ledgerText} (expected exactly 1)`);
  if (ledgerNotOne || facts.ledgerDuplicates.length) {
    violations.push(`${ledgerNotOne} run(s) without exactly one ledger row, e.g. ${JSON.stringify(facts.ledgerDuplicates.slice(0, 3))}`);
  }

  // 2b. Compensations of the runs that failed on purpose: newest step first, the transactional one
  // (unledger) exactly once, each plain one at least once (extra executions are judged below).
  lines.push(
    `runs that failed on purpose and compensated s2, ledger, s1, s0 (newest first; unledger exactly once, each plain undo executed): ` +
      `${facts.compensated} of ${undo}; runs whose compensations are not as expected: ${facts.badCompensations.length}`,
  );
  if (facts.compensated !== undo || facts.badCompensations.length) {
    violations.push(
      `compensations not as expected in ${facts.badCompensations.length} run(s), e.g. ${JSON.stringify(facts.badCompensations.slice(0, 3))}`,
    );
  }
  if (facts.ledgerPidMismatches)
    violations.push(`${facts.ledgerPidMismatches} ledger row(s) written by another process than the one whose checkpoint committed`);

  // 2b. The schedule (every second, declared by every worker): each slot from the first to the last
  // has exactly one run (no gap, none twice), SUCCEEDED, with one ledger row.
  const slots = facts.ticks.map((t) => Date.parse(t.slot));
  const expectedSlots = slots.length ? Math.round((slots[slots.length - 1] - slots[0]) / 1000) + 1 : 0;
  const gaps = slots.slice(1).filter((t, i) => t - slots[i] !== 1_000).length;
  const badTicks = facts.ticks.filter((t) => t.status !== 'SUCCEEDED' || t.ledger !== 1);
  const scheduleBadSlots = expectedSlots - slots.length + badTicks.length;
  if (s.schedule) {
    lines.push(
      `schedule ${'chaos.tick'} (every second, fired by every worker's scheduler): ${slots.length} runs for ${expectedSlots} slots ` +
        `${slots.length ? `(${facts.ticks[0].slot} … ${facts.ticks[facts.ticks.length - 1].slot})` : ''}; slots without exactly one SUCCEEDED run ` +
        `with one ledger row: ${scheduleBadSlots} (expected 0)`,
    );
    if (!slots.length) violations.push('the schedule chaos.tick started no run');
  } else if (slots.length) violations.push(`no schedule was declared, yet ${slots.length} run(s) of chaos.tick exist`);
  if (scheduleBadSlots || gaps) {
    violations.push(
      `schedule chaos.tick: ${expectedSlots - slots.length} slot(s) without a run, ${gaps} gap(s), ${badTicks.length} run(s) not SUCCEEDED with one ledger row, e.g. ${JSON.stringify(badTicks.slice(0, 3))}`,
    );
  }

  // 3. Plain-step executions above 1, explained by the kills, zombies and the restart.
  const live = s.workers;
  const dup = judgeDuplicates(facts, events, s, live);
  const causes = [...dup.byCause].map(([c, n]) => `${c}: ${n}`).join(', ') || 'none';
  lines.push(
    `plain-step executions above 1: ${dup.extra} (at-least-once; each kill/zombie may explain ≤ ${inFlightBudget(s)} unwritten steps, ` +
      `the outage ≤ ${inFlightBudget(s) * live}) — wasted executions by cause: ${causes}`,
  );
  const unexplained = dup.unexplained.length ? `; unexplained, e.g. ${JSON.stringify(dup.unexplained.slice(0, 5))}` : '';
  for (const b of dup.overBudget) violations.push(`more re-executed steps than the chaos explains: ${b}${unexplained}`);
  if (unexplained) lines.push(`  ${unexplained.slice(2)}`);
  // What the database recorded of such a run, and when its executions were (for whoever looks into it).
  for (const u of dup.unexplained.slice(0, 2)) {
    const executions = facts.duplicates.find((d) => d.run === u.run && d.step === u.step);
    const at = (t: number) => `${((t - o.startedAt) / 1000).toFixed(2)}s`;
    lines.push(
      `  ${u.run} ${u.step}: executions ${(executions?.executions ?? []).map((x) => `${x.pid}@${at(x.t)}`).join(', ')}, accepted ${executions?.acceptedPid}; ` +
        `history ${(facts.history.get(u.run) ?? []).map((e) => `${e.kind}${e.worker ? ` ${e.worker}` : ''}@${at(e.t)}`).join(', ')}`,
    );
  }
  // Re-executions after a live worker missed its heartbeats are correct (the lease moved on and
  // fencing held) but mean the machine was too loaded to keep a lease: timing, strict in full chaos.
  const stalledRuns = dup.byCause.get(LEASE_LOST_LIVE) ?? 0;
  if (stalledRuns) timing(`${stalledRuns} step(s) re-executed because a live worker missed its heartbeats and lost a lease`);

  // 4. Runs stuck (ownerless) longer than lease + sweep interval.
  const periods = ownerlessPeriods(facts, events, s);
  const stuck = periods.filter((p) => p.ms > p.limitMs);
  const longest = periods.reduce((a, p) => (p.ms > a.ms ? p : a), { ms: 0, cause: '-', run: '-', limitMs: 0 });
  const spurious = periods.filter((p) => p.cause.includes('without a kill'));
  lines.push(
    `runs stuck (held by a dead, frozen or cut-off worker until swept) longer than lease + sweep interval (${sec(s.leaseMs + s.sweepMs)}; ` +
      `judged with 20 % sweep jitter + 1 s slack: ${sec(s.leaseMs + s.sweepMs * 1.2 + 1_000)}, + the time the database was away): ` +
      `${stuck.length} of ${periods.length} lease expirations; longest ${sec(longest.ms)} (${longest.cause})`,
  );
  if (stuck.length)
    timing(
      `${stuck.length} run(s) stuck: e.g. ${stuck
        .slice(0, 3)
        .map((p) => `${p.run} ${sec(p.ms)} after ${p.cause}`)
        .join('; ')}`,
    );
  if (spurious.length) {
    timing(
      `${spurious.length} lease(s) expired without a kill, zombie or restart (a worker failed to heartbeat), e.g. ${spurious[0].cause}`,
    );
  }

  // 5. Recovery after each kill (and zombie): until the runs it held were claimed again.
  const describe = (label: string, list: Recovery[]) => {
    const done = list.filter((r) => r.runs > 0);
    const times = done.map((r) => r.recoveryMs ?? Infinity);
    const swept = done.map((r) => r.sweptMs);
    lines.push(
      `recovery after each ${label} (until its in-flight runs were claimed again): n=${done.length}` +
        (done.length
          ? `, p50 ${sec(percentile(times, 50))}, max ${sec(Math.max(...times))} (made claimable again by the sweeper after ` +
            `p50 ${sec(percentile(swept, 50))}, max ${sec(Math.max(...swept))}; the rest is queueing behind other due runs); ` +
            `runs left behind: ${done.map((r) => r.runs).join(', ')}`
          : ''),
    );
    for (const r of list)
      if (r.recoveryMs === null)
        violations.push(`runs of ${label === 'kill' ? 'killed' : 'frozen'} worker ${r.pid} were never claimed again`);
    return times.filter(Number.isFinite);
  };
  const killTimes = describe('kill', recoveries(facts, events, 'kill'));
  describe('zombie', recoveries(facts, events, 'freeze'));

  // 6. Zombie writes accepted.
  const zw = zombieWrites(facts);
  lines.push(
    `zombie writes accepted (checkpoints, ledger rows, completions by a process after its lease was taken over): ${zw.length} (expected 0)`,
  );
  if (zw.length)
    violations.push(`${zw.length} write(s) accepted from a process that no longer held the lease, e.g. ${JSON.stringify(zw.slice(0, 3))}`);

  // 7. Processes: no crash (not even while Postgres restarts), graceful exit at the end.
  lines.push(
    `worker processes: ${fleet.all.length} started, ${fleet.crashes.length} crashed, ${fleet.bootFailures} failed to boot, ` +
      `${o.stopFailures.length} did not exit 0 on SIGTERM`,
  );
  for (const c of fleet.crashes) violations.push(`worker ${c.pid} crashed (exit ${c.code ?? c.signal}):\n${c.tail}`);
  for (const f of o.stopFailures) violations.push(`worker ${f.pid} exited ${f.code} on SIGTERM`);

  // 8. Flow control: the limits held across the kills; every slot came back.
  const flow = judgeSlots(s, o.slots, facts);
  lines.push(...flow.lines);
  violations.push(...flow.violations);
  const keyed = judgeKeys(s, o.keys);
  lines.push(...keyed.lines);
  violations.push(...keyed.violations);

  // 9. A failover: how soon work went on on the new primary, and what (if anything) it lost.
  if (o.failover) {
    // Per worker at most: the engine's pool (≤ 10), the Prisma pool (≤ concurrency + 2), the LISTEN session.
    const f = judgeFailover(o.failover, facts, s.leaseMs, s.workers * (s.concurrency + 13));
    lines.push(...f.lines);
    violations.push(...f.violations);
  }

  // 9b. A shard move (Citus): it happened, with runs of the partition in flight.
  if (s.outage === 'shard-move') {
    const m = judgeShardMove(o.shardMove ?? null, facts, s.leaseMs);
    lines.push(...m.lines);
    violations.push(...m.violations);
  }

  // 10. Database outage: logged once per outage, not per attempt.
  if (restart?.end) {
    const perWorker = fleet.all
      .filter((w) => w.lines.some((l) => l.at <= restart.at))
      .map((w) => ({ pid: w.pid, groups: outageLogLines(w.lines, restart.at - 1_000, restart.end! + 15_000) }));
    const worst = perWorker.map((w) => [...w.groups.values()].reduce((a, b) => a + b, 0));
    lines.push(`warnings/errors logged per worker around the outage: ${worst.join(', ') || 'none'}`);
    const groups = new Map<string, number>();
    for (const w of perWorker) for (const [m, n] of w.groups) groups.set(m, Math.max(groups.get(m) ?? 0, n));
    for (const [m, n] of [...groups].sort((a, b) => b[1] - a[1]).slice(0, 8)) lines.push(`  ≤${n}× per worker: ${m.slice(0, 160)}`);
    for (const w of fleet.all.filter((x) => x.state === 'stopped' && x.lines.some((l) => l.at <= restart.at))) {
      for (const what of unrecovered(w.lines, restart.at - 1_000))
        violations.push(`worker ${w.pid}: "${what}" failed in the outage and never worked again`);
    }
    for (const [m, n] of groups) {
      // A step's own failures are logged per attempt, by design (they are the user's errors and retries).
      if (/failed \(attempt #\/#\), retrying/.test(m)) continue;
      // So is a run's end (once per run): every 5th run fails on purpose, whenever it ends.
      if (/\brun chaos-# \([\w.]+\) FAILED: /.test(m)) continue;
      if (n > s.concurrency + 2)
        violations.push(`logged ${n}× by one worker during the outage (per attempt, not once per outage): ${m.slice(0, 160)}`);
    }
  }

  return {
    lines,
    violations,
    warnings,
    figures: {
      runs: s.runs,
      statuses: facts.statuses,
      childStatuses: facts.childStatuses,
      kills: count('kill'),
      zombies: count('freeze'),
      pgRestarts: count('pg-restart'),
      ledgerNotOne,
      compensated: facts.compensated,
      badCompensations: facts.badCompensations.length,
      extraExecutions: dup.extra,
      unexplainedExecutions: dup.unexplained.length,
      zombieWrites: zw.length,
      stuck: stuck.length,
      recoveryP50Ms: percentile(killTimes, 50),
      recoveryMaxMs: killTimes.length ? Math.max(...killTimes) : 0,
      crashes: fleet.crashes.length,
      scheduleSlots: expectedSlots,
      scheduleBadSlots,
      slotStatuses: o.slots.statuses,
      slotOverlap: flow.figures.overall,
      slotKeyOverlap: flow.figures.perKey,
      ratedStatuses: o.keys.ratedStatuses,
      ratedMostInWindow: keyed.figures.mostRated,
      singleOverlap: keyed.figures.singleOverlap,
      keyDuplicates: keyed.figures.keyDuplicates,
      earlyBounces: keyed.figures.earlyBounces,
    },
  };
}
