import type pg from 'pg';
import { SLOT_QUEUE, SLOT_WORKFLOW, type ChaosSettings } from './chaos-config.js';
import type { ChaosFacts } from './chaos-facts.js';
import { SINGLE_SERVER_TABLES, type DurableTables } from './chaos-tables.js';
import { percentile } from './chaos-checks.js';
import { byKey, maxOverlap, type Interval } from '../support/intervals.js';

/** What the database says of the flow-control runs (SLOT_WORKFLOW in the limited queue SLOT_QUEUE). */
export interface SlotFacts {
  statuses: Record<string, number>;
  /** The intervals the accepted executions held their slot in (committed with their checkpoint: see holdSlot in chaos-app.ts). */
  intervals: Interval[];
  /** Runs of the limited queue still RUNNING at the end (slots never given back). */
  stillRunning: number;
}

const ms = (col: string) => `(extract(epoch from ${col}) * 1000)::float8`;

export async function loadSlotFacts(pool: pg.Pool, t: DurableTables = SINGLE_SERVER_TABLES): Promise<SlotFacts> {
  const q = async <T>(sql: string) => (await pool.query(sql)).rows as T[];
  const statuses = Object.fromEntries(
    (
      await q<{ status: string; n: number }>(
        `SELECT status, count(*)::int AS n FROM ${t.runs} r WHERE workflow_name = '${SLOT_WORKFLOW}' GROUP BY status`,
      )
    ).map((r) => [r.status, r.n]),
  );
  const intervals = await q<Interval>(`
    SELECT s.run_id AS "runId", r.concurrency_key AS key, s.pid, ${ms('s.at')} AS start, ${ms('e.at')} AS "end"
    FROM test_ledger s JOIN test_ledger e ON e.run_id = s.run_id AND e.step = 'slot:end'
    JOIN ${t.runs} r ON r.id = s.run_id
    WHERE s.step = 'slot'`);
  const [{ n: stillRunning }] = await q<{ n: number }>(
    `SELECT count(*)::int AS n FROM ${t.runs} r WHERE queue = '${SLOT_QUEUE}' AND status = 'RUNNING'`,
  );
  return { statuses, intervals, stillRunning };
}

/**
 * The flow-control checks: the limits held across the kills (the maximum overlap of the accepted
 * executions' intervals, queue-wide and per key, never above the limits), every run finished, and
 * every slot held by a run whose lease expired (its worker killed, frozen or cut off) came back:
 * the key executed again after the expiry (timed from the expiry to the key's next execution).
 */
export function judgeSlots(s: ChaosSettings, slots: SlotFacts, facts: ChaosFacts) {
  const lines: string[] = [];
  const violations: string[] = [];
  const { globalConcurrency: g, keyConcurrency: k } = s.slotLimits;
  const statusText = Object.entries(slots.statuses)
    .map(([st, n]) => `${st} ${n}`)
    .join(', ');
  const keys = byKey(slots.intervals);
  const overall = maxOverlap(slots.intervals);
  const perKey = Math.max(0, ...[...keys.values()].map(maxOverlap));
  lines.push(
    `flow control (queue ${SLOT_QUEUE}: at most ${g} runs at once, ${k} per key; ${s.slotRuns} runs over ${s.slotKeys} keys): ${statusText || 'none'}; ` +
      `most executing at once ${overall} (limit ${g}), per key ${perKey} (limit ${k}); accepted executions ${slots.intervals.length}`,
  );
  if ((slots.statuses.SUCCEEDED ?? 0) !== s.slotRuns) violations.push(`flow-control runs not all SUCCEEDED: ${statusText}`);
  if (slots.intervals.length !== (slots.statuses.SUCCEEDED ?? 0))
    violations.push(`${slots.intervals.length} accepted slot executions for ${slots.statuses.SUCCEEDED ?? 0} SUCCEEDED flow-control runs`);
  if (overall > g) violations.push(`queue-wide limit exceeded: ${overall} runs of ${SLOT_QUEUE} executed at once (limit ${g})`);
  for (const [key, xs] of keys) {
    const n = maxOverlap(xs);
    if (n > k) violations.push(`key limit exceeded: ${n} runs of key ${key} executed at once (limit ${k})`);
  }
  if (slots.stillRunning) violations.push(`${slots.stillRunning} run(s) of ${SLOT_QUEUE} still RUNNING at the end: slots never given back`);

  // Slots held when a lease expired: from the expiry to the next execution of that key.
  const keyOf = new Map(slots.intervals.map((x) => [x.runId, x.key!]));
  const returns: number[] = [];
  for (const [run, events] of facts.history) {
    const key = keyOf.get(run);
    if (!key) continue;
    for (const e of events.filter((x) => x.kind === 'lease_expired')) {
      const next = keys.get(key)!.filter((x) => x.start > e.t);
      if (next.length) returns.push(Math.min(...next.map((x) => x.start)) - e.t);
    }
  }
  lines.push(
    `flow-control slots held by a run whose lease expired: ${returns.length}` +
      (returns.length
        ? `; the key executed again after p50 ${(percentile(returns, 50) / 1000).toFixed(2)} s, max ${(Math.max(...returns) / 1000).toFixed(2)} s`
        : ''),
  );
  return { lines, violations, figures: { overall, perKey, expiredSlots: returns.length } };
}
