/**
 * Finished runs with their steps and history, made by set-based SQL (one statement per chunk), as
 * a busy app's tables hold them after weeks: runs arriving at a steady rate (the newest a minute
 * old, each older one `spacing` seconds before it), random ids (the engine's default is a v4 UUID),
 * 20 workflows, 3 queues, 90 % SUCCEEDED / 8 % FAILED / 2 % CANCELLED, a small JSON input and
 * output, 1 run in 50 tagged "vip"; K steps per run and the three history events the engine writes
 * for such a run (created, claimed, completed/failed/cancelled).
 * Speed: inserting through the tables' 19 indexes and the steps' foreign key ran at ~3,000 runs/s
 * here (an hour for 10 million), so the fill drops the indexes and keys first and builds them again
 * afterwards (sorted builds: denser than indexes grown row by row; see indexesDenserNote).
 */
import type pg from 'pg';

const FILL_CHUNK = `
WITH g AS MATERIALIZED (
  SELECT g, md5('run-' || g)::uuid::text AS id,
         date_trunc('milliseconds', now() - interval '1 minute' - g * $4::float8 * interval '1 second') AS t,
         CASE WHEN g % 100 < 90 THEN 'SUCCEEDED' WHEN g % 100 < 98 THEN 'FAILED' ELSE 'CANCELLED' END AS st,
         'workflow-' || ((g / 3) % 20) AS wf,
         CASE g % 10 WHEN 0 THEN 'emails' WHEN 1 THEN 'reports' ELSE 'default' END AS q
  FROM generate_series($1::bigint, $2::bigint) g),
r AS (
  INSERT INTO durable_runs (id, workflow_name, queue, status, input, output, error, priority, available_at, lease_epoch, attempt,
                            created_at, started_at, finished_at, updated_at, tags)
  SELECT id, wf, q, st, jsonb_build_object('orderId', g, 'customer', 'customer-' || (g % 1000)),
         CASE st WHEN 'SUCCEEDED' THEN jsonb_build_object('ok', true, 'total', g % 997) END,
         CASE st WHEN 'FAILED' THEN '{"name":"Error","message":"card declined"}'::jsonb END,
         0, t, 1, 1, t, t + interval '5 ms', t + interval '80 ms', t + interval '80 ms',
         CASE WHEN g % 50 = 0 THEN ARRAY['vip'] ELSE '{}'::text[] END
  FROM g),
s AS (
  INSERT INTO durable_steps (run_id, seq, name, status, output, error, attempts, started_at, finished_at)
  SELECT id, k, 'step-' || k, CASE WHEN st = 'FAILED' AND k = $3 - 1 THEN 'FAILED' ELSE 'SUCCEEDED' END,
         CASE WHEN st = 'FAILED' AND k = $3 - 1 THEN NULL ELSE to_jsonb(k) END,
         CASE WHEN st = 'FAILED' AND k = $3 - 1 THEN '{"name":"Error","message":"card declined"}'::jsonb END,
         1, t + (10 + 20 * k) * interval '1 ms', t + (25 + 20 * k) * interval '1 ms'
  FROM g CROSS JOIN generate_series(0, $3::int - 1) k),
e AS (
  INSERT INTO durable_run_events (run_id, kind, detail, at)
  SELECT id, v.kind, v.detail, v.at FROM g CROSS JOIN LATERAL (VALUES
    ('created', jsonb_build_object('workflow', wf, 'queue', q), t),
    ('claimed', '{"worker":"host-1:4242:a1b2","epoch":1,"attempt":1}'::jsonb, t + interval '5 ms'),
    (CASE st WHEN 'SUCCEEDED' THEN 'completed' WHEN 'FAILED' THEN 'failed' ELSE 'cancelled' END,
     CASE st WHEN 'FAILED' THEN '{"error":"card declined"}'::jsonb END, t + interval '80 ms')) v(kind, detail, at))
SELECT count(*)::int AS n FROM g`;

const TABLES = ['durable_runs', 'durable_steps', 'durable_run_events'];

/**
 * Drops the indexes and keys of the runs' tables (and the foreign keys that point at them); returns
 * the statements that make them again, in an order that works (primary keys, indexes, foreign keys).
 */
export async function dropIndexes(c: pg.Client): Promise<string[]> {
  const { rows: keys } = await c.query<{ tbl: string; name: string; def: string; kind: string }>(
    `SELECT conrelid::regclass::text AS tbl, conname AS name, pg_get_constraintdef(oid) AS def, contype AS kind FROM pg_constraint
     WHERE contype IN ('p', 'f', 'u') AND (conrelid = ANY($1::regclass[]) OR confrelid = ANY($1::regclass[]))`,
    [TABLES],
  );
  const { rows: idx } = await c.query<{ name: string; def: string }>(
    `SELECT i.indexrelid::regclass::text AS name, pg_get_indexdef(i.indexrelid) AS def FROM pg_index i
     WHERE i.indrelid = ANY($1::regclass[]) AND NOT EXISTS (SELECT 1 FROM pg_constraint k WHERE k.conindid = i.indexrelid)`,
    [TABLES],
  );
  const fks = keys.filter((k) => k.kind === 'f');
  const others = keys.filter((k) => k.kind !== 'f');
  for (const k of [...fks, ...others]) await c.query(`ALTER TABLE ${k.tbl} DROP CONSTRAINT "${k.name}"`);
  for (const i of idx) await c.query(`DROP INDEX ${i.name}`);
  return [
    ...others.map((k) => `ALTER TABLE ${k.tbl} ADD CONSTRAINT "${k.name}" ${k.def}`),
    ...idx.map((i) => i.def),
    ...fks.map((k) => `ALTER TABLE ${k.tbl} ADD CONSTRAINT "${k.name}" ${k.def}`),
  ];
}

/** Runs the statements dropIndexes returned, with memory for the sorts; returns the seconds spent. */
export async function rebuildIndexes(c: pg.Client, ddl: string[], log: (m: string) => void): Promise<number> {
  const t0 = performance.now();
  await c.query(`SET maintenance_work_mem = '1GB'`);
  for (const d of ddl) {
    const s = performance.now();
    await c.query(d);
    log(`  ${((performance.now() - s) / 1000).toFixed(1).padStart(6)} s  ${d.slice(0, 110)}`);
  }
  await c.query('RESET maintenance_work_mem');
  return (performance.now() - t0) / 1000;
}

/** Inserts runs number `from` … `to` - 1 (0 = the newest) in chunks; progress through `log`. Returns the seconds spent. */
export async function fillRuns(
  c: pg.Client,
  o: { from: number; to: number; chunk: number; steps: number; spacingS: number },
  log: (m: string) => void,
): Promise<number> {
  const t0 = performance.now();
  for (let lo = o.from; lo < o.to; lo += o.chunk) {
    const hi = Math.min(o.to, lo + o.chunk) - 1;
    const s = performance.now();
    await c.query(FILL_CHUNK, [lo, hi, o.steps, o.spacingS]);
    const dt = (performance.now() - s) / 1000;
    log(
      `  runs ${lo.toLocaleString('en-US')}–${hi.toLocaleString('en-US')}: ${dt.toFixed(1)} s (${Math.round((hi - lo + 1) / dt).toLocaleString('en-US')} runs/s with their steps and history)`,
    );
  }
  return (performance.now() - t0) / 1000;
}

export interface TableBytes {
  table: string;
  rows: number;
  /** Heap + TOAST + free space and visibility maps. */
  tableBytes: number;
  indexBytes: number;
  indexes: Record<string, number>;
}

/** Size of each table the runs live in, with each index; `rows` from the statistics (after ANALYZE). */
export async function tableBytes(c: pg.Client): Promise<TableBytes[]> {
  const out: TableBytes[] = [];
  for (const table of TABLES) {
    const { rows } = await c.query(
      `SELECT pg_table_size($1::regclass)::bigint AS t, pg_indexes_size($1::regclass)::bigint AS i,
              (SELECT reltuples::bigint FROM pg_class WHERE oid = $1::regclass) AS n`,
      [table],
    );
    const idx = await c.query(
      `SELECT indexrelid::regclass::text AS name, pg_relation_size(indexrelid)::bigint AS b FROM pg_index WHERE indrelid = $1::regclass ORDER BY 2 DESC`,
      [table],
    );
    out.push({
      table,
      rows: Number(rows[0].n),
      tableBytes: Number(rows[0].t),
      indexBytes: Number(rows[0].i),
      indexes: Object.fromEntries(idx.rows.map((r) => [r.name, Number(r.b)])),
    });
  }
  return out;
}
