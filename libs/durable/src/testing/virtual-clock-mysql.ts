/**
 * Virtual time on a MariaDB test database (see VIRTUAL_CLOCK in store/mysql-client.ts): the one-row
 * table durable_virtual_clock holds the offset; the engine's sessions set their `timestamp` from it.
 * The twins of virtual-clock.ts's statements. Only the testing kit imports this file.
 */
import { VIRTUAL_CLOCK_TABLE } from '../store/mysql-client.js';
import { date, NOW } from '../store/mysql/sql.js';
import type { Store } from '../store/store.js';
import type { UnsettledRun, VirtualClockState } from './clock-state.js';

/** The clock's table, made in each MariaDB test database. */
export const CREATE_VIRTUAL_CLOCK = `CREATE TABLE ${VIRTUAL_CLOCK_TABLE} (one TINYINT NOT NULL DEFAULT 1 PRIMARY KEY, offset_ms DOUBLE NOT NULL);
INSERT INTO ${VIRTUAL_CLOCK_TABLE} (one, offset_ms) VALUES (1, 0)`;

const REAL_NOW_MS = 'UNIX_TIMESTAMP(SYSDATE(3)) * 1000';
const ms = (v: unknown) => (v == null ? null : date(v)!.getTime());

/** Moves the clock forward to `toMs` (never backward) and the RUNNING runs' leases by as much, in one transaction. */
export async function moveVirtualClock(store: Store, toMs: number): Promise<{ offsetMs: number; nowMs: number }> {
  return store.sql.transaction(async (sql) => {
    const [row] = await sql.query<{ offset_ms: unknown; real_ms: unknown }>(
      `SELECT offset_ms, ${REAL_NOW_MS} AS real_ms FROM ${VIRTUAL_CLOCK_TABLE} FOR UPDATE`,
    );
    const before = Number(row.offset_ms);
    const offset = Math.max(before, toMs - Number(row.real_ms));
    if (offset > before) {
      await sql.execute(`UPDATE ${VIRTUAL_CLOCK_TABLE} SET offset_ms = ?`, [offset]);
      await sql.execute(
        `UPDATE durable_runs SET lease_expires_at = lease_expires_at + INTERVAL ROUND(? * 1000) MICROSECOND
         WHERE status = 'RUNNING' AND lease_expires_at IS NOT NULL`,
        [offset - before],
      );
    }
    return { offsetMs: offset, nowMs: Number(row.real_ms) + offset };
  });
}

/** The clock and the earliest timer after now: a due time, a deadline, a schedule's next fire. */
export async function readVirtualClock(store: Store): Promise<VirtualClockState> {
  const [row] = await store.sql.query<Record<string, unknown>>(
    `SELECT c.offset_ms, ${REAL_NOW_MS} AS real_ms,
       (SELECT min(available_at) FROM durable_runs WHERE status IN ('PENDING', 'WAITING') AND available_at > ${NOW}) AS next_due,
       (SELECT min(deadline_at) FROM durable_runs WHERE status IN ('PENDING', 'RUNNING', 'WAITING') AND deadline_at > ${NOW}) AS next_deadline_after,
       (SELECT min(next_fire_at) FROM durable_schedules WHERE paused = FALSE AND next_fire_at > ${NOW}) AS next_fire,
       (SELECT min(deadline_at) FROM durable_runs WHERE status IN ('PENDING', 'RUNNING', 'WAITING')) AS next_deadline
     FROM ${VIRTUAL_CLOCK_TABLE} c`,
  );
  const timers = [row.next_due, row.next_deadline_after, row.next_fire].map(ms).filter((t): t is number => t !== null);
  const offsetMs = Number(row.offset_ms);
  return {
    offsetMs,
    nowMs: Number(row.real_ms) + offsetMs,
    nextTimerMs: timers.length ? Math.min(...timers) : null,
    nextDeadlineMs: ms(row.next_deadline),
  };
}

/** Runs (at most 20) the engine could still work on now, and the number of due schedules. */
export async function unsettledWork(
  store: Store,
  workflows: string[],
  schedules: boolean,
): Promise<{ runs: UnsettledRun[]; schedules: number }> {
  if (!workflows.length) return { runs: [], schedules: 0 };
  const names = workflows.map(() => '?').join(', ');
  const runs = await store.sql.query<Record<string, unknown>>(
    `SELECT id, workflow_name, status, coalesce(deadline_at <= ${NOW}, FALSE) AS overdue FROM durable_runs
     WHERE workflow_name IN (${names})
       AND (status = 'RUNNING' OR (status IN ('PENDING', 'WAITING') AND (available_at <= ${NOW} OR deadline_at <= ${NOW})))
     ORDER BY id LIMIT 20`,
    workflows,
  );
  const [due] = schedules
    ? await store.sql.query<{ n: unknown }>(
        `SELECT count(*) AS n FROM durable_schedules WHERE paused = FALSE AND next_fire_at <= ${NOW} AND workflow_name IN (${names})`,
        workflows,
      )
    : [{ n: 0 }];
  return {
    runs: runs.map((r) => ({
      id: r.id as string,
      workflow: r.workflow_name as string,
      status: r.status as string,
      overdue: Number(r.overdue) === 1,
    })),
    schedules: Number(due.n),
  };
}
