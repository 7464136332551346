import type { ChaosSettings } from './chaos-config.js';
import type { ChaosEvent } from './chaos-driver.js';
import type { ChaosFacts } from './chaos-facts.js';

/**
 * The analyses of a chaos run, as pure functions of what the driver did (events) and what the
 * database says (facts). Database timestamps have millisecond precision: comparisons allow 1 ms.
 */
const TOLERANCE_MS = 1;
/**
 * A killed process does nothing after the SIGKILL, but a statement it sent just before is executed
 * (and stamped by the server's clock) afterwards: its rows may carry a time this much past the kill.
 */
const IN_FLIGHT_MS = 1_000;
/** The cause of a re-execution whose first process was alive but lost its lease (judged as timing). */
export const LEASE_LOST_LIVE = 'lease lost by a live worker that missed its heartbeats';
type History = ChaosFacts['history'] extends Map<string, infer V> ? V : never;
const workerOf = (pid: number) => `chaos:${pid}`;
const isClaim = (kind: string) => kind === 'claimed' || kind === 'woken';

/** The worker whose lease covered time t, and the one before it (for writes within rounding of a hand-over). */
function ownersAt(h: History | undefined, t: number): { owner: string | null; previous: string | null; claimedAt: number } {
  let owner: string | null = null;
  let previous: string | null = null;
  let claimedAt = -Infinity;
  for (const e of h ?? []) {
    if (!isClaim(e.kind) || e.t > t + TOLERANCE_MS) continue;
    previous = owner;
    owner = e.worker;
    claimedAt = e.t;
  }
  return { owner, previous, claimedAt };
}

/**
 * Zombie writes accepted: a checkpoint, ledger row or completion written by a process while
 * another worker held the run's lease (it was taken over and not claimed back by the writer).
 */
export function zombieWrites(facts: ChaosFacts): Array<{ run: string; what: string; pid: number; owner: string | null }> {
  const bad: Array<{ run: string; what: string; pid: number; owner: string | null }> = [];
  for (const w of facts.writes) {
    const { owner, previous, claimedAt } = ownersAt(facts.history.get(w.run), w.t);
    if (owner === workerOf(w.pid)) continue;
    // Within rounding of a hand-over, the write may belong to the previous epoch.
    if (previous === workerOf(w.pid) && Math.abs(claimedAt - w.t) <= TOLERANCE_MS) continue;
    bad.push({ run: w.run, what: w.what, pid: w.pid, owner });
  }
  return bad;
}

/** Epochs of worker `workerId` that were current at time `at` and ended by the sweeper (lease_expired) after it. */
function lostEpochs(
  facts: ChaosFacts,
  workerId: string,
  at: number,
): Array<{ run: string; expiredAt: number; reclaimedAt: number | null }> {
  const out: Array<{ run: string; expiredAt: number; reclaimedAt: number | null }> = [];
  for (const [run, h] of facts.history) {
    let current: string | null = null;
    for (let i = 0; i < h.length; i++) {
      const e = h[i];
      if (isClaim(e.kind)) current = e.t <= at ? e.worker : current;
      if (e.t <= at || current !== workerId) continue;
      // The first event of this run after `at` decides: swept (the lease was lost) or not.
      if (e.kind === 'lease_expired' && e.worker === workerId) {
        const next = h.slice(i + 1).find((x) => isClaim(x.kind));
        out.push({ run, expiredAt: e.t, reclaimedAt: next?.t ?? null });
      }
      break;
    }
  }
  return out;
}

export interface Recovery {
  pid: number;
  /** Runs its death left behind (their lease expired afterwards). */
  runs: number;
  /** Until the last of them was claimed again (ms after the kill/freeze); null if one never was. */
  recoveryMs: number | null;
  /** Until the last of them was made claimable again by the sweeper (the engine's part of the recovery). */
  sweptMs: number;
}

/** Per kill (or freeze): how long until every run the worker left behind was claimed again. */
export function recoveries(facts: ChaosFacts, events: ChaosEvent[], kind: 'kill' | 'freeze'): Recovery[] {
  return events
    .filter((e) => e.kind === kind)
    .map((e) => {
      const lost = lostEpochs(facts, e.workerId!, e.at);
      const never = lost.some((l) => l.reclaimedAt === null);
      const last = Math.max(e.at, ...lost.map((l) => l.reclaimedAt ?? 0));
      const swept = Math.max(e.at, ...lost.map((l) => l.expiredAt)) - e.at;
      return { pid: e.pid!, runs: lost.length, recoveryMs: never ? null : lost.length ? last - e.at : 0, sweptMs: swept };
    });
}

export interface StuckPeriod {
  run: string;
  cause: string;
  /**
   * From when the run's executor could no longer progress (kill, freeze, outage; else lease
   * expiry − lease) until the sweeper made it claimable again. (Waiting in the queue after that,
   * behind other due runs, is queueing, not being stuck: it shows in the recovery times.)
   */
  ms: number;
  limitMs: number;
}

/** Ownerless periods of runs whose lease expired, by cause, with the limit each is judged by. */
export function ownerlessPeriods(facts: ChaosFacts, events: ChaosEvent[], s: ChaosSettings): StuckPeriod[] {
  const base = s.leaseMs + s.sweepMs * 1.2 + 1_000;
  const restart = events.find((e) => e.kind === 'pg-restart' && e.end);
  const out: StuckPeriod[] = [];
  for (const [run, h] of facts.history) {
    h.forEach((e) => {
      if (e.kind !== 'lease_expired') return;
      const next = e.t;
      const window = s.leaseMs + 2 * s.sweepMs + 5_000;
      const hit = [...events]
        .reverse()
        .find(
          (c) =>
            (c.kind === 'kill' || c.kind === 'freeze') &&
            c.workerId === e.worker &&
            c.at <= e.t &&
            (c.kind === 'kill' || e.t <= (c.end ?? Infinity) + window),
        );
      let start: number;
      let cause: string;
      let limitMs = base;
      if (hit) {
        start = hit.at;
        cause = hit.kind === 'kill' ? `SIGKILL of ${hit.pid}` : `zombie ${hit.pid}`;
      } else if (restart && e.t >= restart.at && e.t <= restart.end! + window) {
        start = restart.at;
        cause = 'database outage';
        limitMs = base + (restart.end! - restart.at);
      } else {
        start = e.t - s.leaseMs;
        cause = `lease of ${e.worker} expired without a kill, zombie or restart`;
      }
      // Time the database was away during the period does not count against the engine.
      if (restart && cause !== 'database outage') limitMs += Math.max(0, Math.min(next, restart.end!) - Math.max(start, restart.at));
      out.push({ run, cause, ms: Math.max(0, next - start), limitMs });
    });
  }
  return out;
}

export interface DuplicateVerdict {
  /** Executions beyond the first, in total. */
  extra: number;
  /** Extra executions by cause ("SIGKILL of 123", "zombie 456", "Postgres restart", "unexplained"). */
  byCause: Map<string, number>;
  /** Causes that explain more extra executions than they can (each kill/zombie at most inFlightBudget). */
  overBudget: string[];
  unexplained: Array<{ run: string; step: string; pid: number }>;
}

/**
 * Plain steps are at-least-once: an execution that did not produce the checkpoint must be explained
 * by its process being killed or frozen, or by the Postgres restart; each such event can explain
 * at most what one process holds unwritten (inFlightBudget), the restart that per live worker. A
 * live process that lost its lease (swept, or given up by the process itself, both recorded in the
 * run's history) explains its own executions of the run in the holding that loss ended: a timing
 * matter, reported by the caller.
 */
/**
 * Step executions one worker process can hold whose checkpoints are not written yet: the steps of the
 * `concurrency` runs executing, and the last step of each run whose end is being written (the last
 * checkpoint goes with the end, and such a run has given its slot to the next one: worker/run-slot.ts
 * lets up to `concurrency` runs end besides those executing). The chaos workflows run one step at a time.
 */
export const inFlightBudget = (s: ChaosSettings) => 2 * s.concurrency;

export function judgeDuplicates(facts: ChaosFacts, events: ChaosEvent[], s: ChaosSettings, liveWorkers: number): DuplicateVerdict {
  const byCause = new Map<string, number>();
  const unexplained: DuplicateVerdict['unexplained'] = [];
  const restart = events.find((e) => e.kind === 'pg-restart' && e.end);
  const stepMax = s.stepMs[1] + s.sleepMs[1];
  let extra = 0;
  for (const d of facts.duplicates) {
    extra += d.executions.length - 1;
    // The execution whose result was checkpointed (the last one by the accepted pid) needs no explanation.
    const wasted = [...d.executions];
    const acceptedIdx = wasted.map((x) => x.pid).lastIndexOf(d.acceptedPid ?? -1);
    wasted.splice(acceptedIdx >= 0 ? acceptedIdx : wasted.length - 1, 1);
    for (const x of wasted) {
      // A step in flight when its process was hit started at most stepMax (+ slack) before.
      const near = (e: ChaosEvent) => e.pid === x.pid && x.t >= e.at - stepMax - 2_000;
      const kill = events.find((e) => e.kind === 'kill' && near(e) && e.at >= x.t - IN_FLIGHT_MS);
      const zombie = events.find((e) => e.kind === 'freeze' && near(e) && x.t <= (e.end ?? Infinity) + s.leaseMs + 2_000);
      // After a failover a worker replays what it was executing once it notices the new primary:
      // at its next connection, which the outage back-off may delay by up to 5 s after the promotion.
      const noticeMs = s.outage === 'failover' ? 5_000 + stepMax : 0;
      const inRestart = restart && x.t >= restart.at - s.leaseMs - stepMax && x.t <= restart.end! + s.leaseMs + 2_000 + noticeMs;
      // A live worker that failed to heartbeat (a starved event loop on a loaded machine) loses its
      // lease like a frozen one, and the run moves on without its checkpoint: the sweeper recorded it
      // (lease_expired), or the worker saw first that its last renewal was older than the lease,
      // stopped the run and handed it back (lease_lost by that worker, then released). That loss
      // explains the executions of the holding it ended: from this worker's last claim (or wake-up) of
      // the run before the execution to the next claim by anyone. The execution may come before the
      // loss or after it (stalled between claim and step, it runs the step late, unaware; the
      // checkpoint is fenced). A 'released' row names no worker: within that holding it is this
      // worker's own, and the chaos stops no worker gracefully until every run is done, so it counts
      // as a loss also when the worker's own 'lease_lost' row was not written (its execution had
      // stopped for another reason, or the row's write failed on the starved process).
      const history = facts.history.get(d.run) ?? [];
      const mine = `chaos:${x.pid}`;
      const takes = (e: { kind: string }) => e.kind === 'claimed' || e.kind === 'woken';
      const from = history.findLastIndex((e) => takes(e) && e.worker === mine && e.t <= x.t);
      const until = from < 0 ? -1 : history.findIndex((e, i) => i > from && takes(e));
      const holding = from < 0 ? [] : history.slice(from + 1, until < 0 ? history.length : until);
      const stalled = holding.find(
        (e) => ((e.kind === 'lease_expired' || e.kind === 'lease_lost') && e.worker === mine) || e.kind === 'released',
      );
      const cause = kill
        ? `SIGKILL of ${kill.pid}`
        : zombie
          ? `zombie ${zombie.pid}`
          : inRestart
            ? 'database outage'
            : stalled
              ? LEASE_LOST_LIVE
              : 'unexplained';
      byCause.set(cause, (byCause.get(cause) ?? 0) + 1);
      if (cause === 'unexplained') unexplained.push({ run: d.run, step: d.step, pid: x.pid });
    }
  }
  const overBudget: string[] = [];
  for (const [cause, n] of byCause) {
    // Each lease lost by a live worker is its own recorded event (no budget to share).
    const budget =
      cause === 'unexplained'
        ? 0
        : cause === LEASE_LOST_LIVE
          ? Infinity
          : cause === 'database outage'
            ? inFlightBudget(s) * liveWorkers
            : inFlightBudget(s);
    if (n > budget) overBudget.push(`${cause}: ${n} extra executions > ${budget}`);
  }
  return { extra, byCause, overBudget, unexplained };
}

/**
 * Log lines a worker wrote around the restart, grouped by message (numbers and ids masked): an
 * outage should be logged once per failing activity (and once per affected run), not per attempt.
 */
export function outageLogLines(lines: Array<{ at: number; text: string }>, from: number, to: number): Map<string, number> {
  const groups = new Map<string, number>();
  for (const l of lines) {
    // eslint-disable-next-line no-control-regex
    const text = l.text.replace(/\x1b\[[0-9;]*m/g, '');
    if (l.at < from || l.at > to || !/\b(ERROR|WARN)\b/.test(text)) continue;
    const msg = text
      .replace(/^.*?\b(ERROR|WARN)\b\s*/, '$1 ')
      .replace(/[0-9a-f]{8}-[0-9a-f-]{27}/gi, '<id>')
      .replace(/\d+/g, '#');
    groups.set(msg, (groups.get(msg) ?? 0) + 1);
  }
  return groups;
}

/**
 * Activities a worker logged as failing from `from` on ("<what> failed: …; retrying with back-off")
 * that it never logged as working again ("<what> works again after …"): the claim loop, the
 * heartbeat, the sweeper, the LISTEN connection, checkpoint writes must all reconnect.
 * Counted, not ordered: an activity logs its failure (once per outage, on stderr) and its recovery
 * (on stdout) in turn, and the two streams' lines can arrive out of order, so a recovery right after
 * a failure may be read before it. Recovered means logged as working again as often as failing.
 */
export function unrecovered(lines: Array<{ at: number; text: string }>, from: number): string[] {
  const open = new Map<string, number>();
  for (const l of lines) {
    if (l.at < from) continue;
    const failed = /\[Durable\] (.+?) failed: .*retrying with back-off/.exec(l.text);
    if (failed) open.set(failed[1], (open.get(failed[1]) ?? 0) + 1);
    const back = /\[Durable\] (.+?) works again after/.exec(l.text);
    if (back) open.set(back[1], (open.get(back[1]) ?? 0) - 1);
  }
  return [...open].filter(([, n]) => n > 0).map(([what]) => what);
}

export function percentile(values: number[], p: number): number {
  if (!values.length) return 0;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
}
