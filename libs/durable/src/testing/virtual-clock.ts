/**
 * Virtual time for tests (nestjs-durable/testing), one seam in SQL: every engine statement reads
 * time as an unqualified `now()`. In a test database made by the testing kit, the schema
 * `durable_virtual_clock` holds a function `now()` = `pg_catalog.now()` + an offset kept in one
 * row, and the database's search_path lists that schema before `pg_catalog`, so the engine's
 * `now()` (and column defaults of now()/CURRENT_TIMESTAMP, redirected when the template is built)
 * resolve to it. Production databases have neither the schema nor the search_path: their
 * statements, plans and speed are untouched. Only the testing kit imports this file.
 */
import type { Client } from 'pg';
import type { UnsettledRun, VirtualClockState } from './clock-state.js';
import * as mysql from './virtual-clock-mysql.js';
export type { UnsettledRun, VirtualClockState } from './clock-state.js';
import { statement } from '../store/statement.js';
import type { Store } from '../store/store.js';

/** The schema that holds the virtual clock in a test database. */
export const VIRTUAL_CLOCK_SCHEMA = 'durable_virtual_clock';

/**
 * Installs the clock in a database being built as a test template (once per template): the offset
 * row, the function, and the defaults of timestamp columns redirected to it, so rows written with
 * a default (created_at, the app's own `@default(now())`) follow virtual time too.
 */
export async function installVirtualClock(db: Client): Promise<void> {
  await db.query(`
CREATE SCHEMA ${VIRTUAL_CLOCK_SCHEMA};
CREATE TABLE ${VIRTUAL_CLOCK_SCHEMA}.state (offset_ms float8 NOT NULL, one boolean PRIMARY KEY DEFAULT true CHECK (one));
INSERT INTO ${VIRTUAL_CLOCK_SCHEMA}.state (offset_ms) VALUES (0);
ANALYZE ${VIRTUAL_CLOCK_SCHEMA}.state; -- one row: without statistics the planner guesses 2,200 and prices the clock's move above jit_above_cost
CREATE FUNCTION ${VIRTUAL_CLOCK_SCHEMA}.now() RETURNS timestamptz LANGUAGE sql STABLE PARALLEL SAFE AS
  $$ SELECT pg_catalog.now() + (SELECT offset_ms FROM ${VIRTUAL_CLOCK_SCHEMA}.state) * interval '1 millisecond' $$;
DO $$
DECLARE c record;
BEGIN
  FOR c IN
    SELECT n.nspname, t.relname, a.attname
    FROM pg_attrdef d
    JOIN pg_attribute a ON a.attrelid = d.adrelid AND a.attnum = d.adnum
    JOIN pg_class t ON t.oid = d.adrelid
    JOIN pg_namespace n ON n.oid = t.relnamespace
    WHERE n.nspname NOT IN ('pg_catalog', 'information_schema', '${VIRTUAL_CLOCK_SCHEMA}')
      AND pg_get_expr(d.adbin, d.adrelid) ~* '^(now\\(\\)|CURRENT_TIMESTAMP)'
  LOOP
    EXECUTE format('ALTER TABLE %I.%I ALTER COLUMN %I SET DEFAULT ${VIRTUAL_CLOCK_SCHEMA}.now()', c.nspname, c.relname, c.attname);
  END LOOP;
END $$;`);
}

/** Makes a test database resolve `now()` to the virtual clock (sessions opened afterwards). */
export async function useVirtualClock(admin: Client, database: string): Promise<void> {
  await admin.query(
    `ALTER DATABASE "${database.replace(/"/g, '""')}" SET search_path = "$user", public, ${VIRTUAL_CLOCK_SCHEMA}, pg_catalog`,
  );
}

/**
 * Moves the clock forward to $1 (epoch ms; never backward) and the leases of RUNNING runs by the
 * same amount (a run executing while time jumps keeps its lease; nothing else is shifted: every
 * other time is a due time that the jump is meant to reach). Locks the clock row and the RUNNING
 * runs' rows (durable_runs_lease_idx). Returns the new offset and the database's new now().
 */
const MOVE_CLOCK = statement(
  'testing_move_clock',
  `
WITH old AS (SELECT offset_ms FROM ${VIRTUAL_CLOCK_SCHEMA}.state FOR UPDATE),
target AS (
  SELECT greatest(old.offset_ms, $1::float8 - extract(epoch FROM pg_catalog.now()) * 1000) AS offset_ms, old.offset_ms AS before FROM old),
clock AS (UPDATE ${VIRTUAL_CLOCK_SCHEMA}.state s SET offset_ms = target.offset_ms FROM target RETURNING s.offset_ms),
leases AS (
  UPDATE durable_runs r SET lease_expires_at = r.lease_expires_at + (target.offset_ms - target.before) * interval '1 millisecond'
  FROM target WHERE r.status = 'RUNNING' AND r.lease_expires_at IS NOT NULL AND target.offset_ms > target.before
  RETURNING r.id)
SELECT (SELECT offset_ms FROM clock) AS offset_ms,
       extract(epoch FROM pg_catalog.now()) * 1000 + (SELECT offset_ms FROM clock) AS now_ms`,
);

/**
 * The clock (offset, now) and the earliest timer after now, before $1 (epoch ms): a PENDING run's
 * start time, a WAITING run's wake-up (its earliest sleep or recv deadline), a run's deadline, a
 * schedule's next fire. No lock; the test database is small (sequential scans are fine).
 */
const READ_CLOCK = statement(
  'testing_read_clock',
  `
SELECT c.offset_ms, extract(epoch FROM now()) * 1000 AS now_ms,
  extract(epoch FROM least(
    (SELECT min(available_at) FROM durable_runs WHERE status IN ('PENDING','WAITING') AND available_at > now()),
    (SELECT min(deadline_at) FROM durable_runs WHERE status IN ('PENDING','RUNNING','WAITING') AND deadline_at > now()),
    (SELECT min(next_fire_at) FROM durable_schedules WHERE NOT paused AND next_fire_at > now())
  )) * 1000 AS next_timer_ms,
  extract(epoch FROM (SELECT min(deadline_at) FROM durable_runs WHERE status IN ('PENDING','RUNNING','WAITING'))) * 1000 AS next_deadline_ms
FROM ${VIRTUAL_CLOCK_SCHEMA}.state c`,
);

/**
 * Is there work the engine can do now? Runs executing, runs due (PENDING/WAITING with available_at
 * reached) of the workflows in $1, runs past their deadline (`overdue`: the sweeper's), schedules due. No lock.
 */
const SELECT_UNSETTLED = statement(
  'testing_unsettled',
  `
SELECT
  (SELECT coalesce(json_agg(json_build_object('id', id, 'workflow', workflow_name, 'status', status, 'overdue', overdue) ORDER BY id), '[]'::json)
   FROM (SELECT id, workflow_name, status, coalesce(deadline_at <= now(), false) AS overdue FROM durable_runs
         WHERE workflow_name = ANY($1::text[])
           AND (status = 'RUNNING' OR (status IN ('PENDING','WAITING') AND available_at <= now())
                OR (status IN ('PENDING','WAITING') AND deadline_at <= now()))
         LIMIT 20) x) AS runs,
  (SELECT count(*)::int FROM durable_schedules WHERE $2::boolean AND NOT paused AND next_fire_at <= now()
     AND workflow_name = ANY($1::text[])) AS schedules`,
);

export async function moveVirtualClock(store: Store, toMs: number): Promise<{ offsetMs: number; nowMs: number }> {
  if (store.sql.dialect === 'mysql') return mysql.moveVirtualClock(store, toMs);
  const [row] = await store.sql.query<{ offset_ms: number; now_ms: string | number }>(MOVE_CLOCK, [toMs]);
  return { offsetMs: Number(row.offset_ms), nowMs: Number(row.now_ms) };
}

export async function readVirtualClock(store: Store): Promise<VirtualClockState> {
  if (store.sql.dialect === 'mysql') return mysql.readVirtualClock(store);
  const [row] = await store.sql.query<{ offset_ms: number; now_ms: unknown; next_timer_ms: unknown; next_deadline_ms: unknown }>(
    READ_CLOCK,
  );
  const ms = (v: unknown) => (v == null ? null : Number(v));
  return {
    offsetMs: Number(row.offset_ms),
    nowMs: Number(row.now_ms),
    nextTimerMs: ms(row.next_timer_ms),
    nextDeadlineMs: ms(row.next_deadline_ms),
  };
}

/** Runs (at most 20) the engine could still work on now, and the number of due schedules. */
export async function unsettledWork(
  store: Store,
  workflows: string[],
  schedules: boolean,
): Promise<{ runs: UnsettledRun[]; schedules: number }> {
  if (store.sql.dialect === 'mysql') return mysql.unsettledWork(store, workflows, schedules);
  const [row] = await store.sql.query<{ runs: unknown; schedules: number }>(SELECT_UNSETTLED, [workflows, schedules]);
  const runs = (typeof row.runs === 'string' ? JSON.parse(row.runs) : row.runs) as UnsettledRun[];
  return { runs, schedules: row.schedules };
}
