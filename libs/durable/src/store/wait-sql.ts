/** The parts of RESOLVE_WAITS (waits.ts) that its distributed form (partitioned-waits.ts) runs as a statement of its own. */
import { dateJson, DUE_BY, plusMs } from './sql-fragments.js';

/**
 * RESOLVE_WAITS' CTEs `w` … `res` (waits.ts, which documents them): the waits of run $1 from eight
 * arrays starting at $`first`, the groups' wake_at written (gu), and `res`, the steps to write (seq,
 * name, status, output, resolves: the wait is resolved, not a timer recorded). `got`: the messages
 * the recvs take. Shared by the single-server statement and RESOLVE_IN_PARTITION, so they agree.
 */
export const waitResults = (first: number) => {
  const p = (i: number, type: string) => `$${first + i}::${type}[]`;
  return `w AS (
  SELECT * FROM unnest(${p(0, 'int')}, ${p(1, 'text')}, ${p(2, 'text')}, ${p(3, 'text')}, ${p(4, 'float8')}, ${p(5, 'timestamptz')}, ${p(6, 'int')}, ${p(7, 'text')})
    AS w(seq, kind, name, key, ms, due, cnt, owner)
  WHERE EXISTS (SELECT 1 FROM run)),
gx AS (
  SELECT coalesce(owner, $1) AS owner, key::int AS gseq, min(cnt) AS cnt FROM w WHERE kind = 'group' GROUP BY 1, 2),
gu AS (
  UPDATE durable_child_groups g SET wake_at = gx.cnt
  FROM gx WHERE g.run_id = gx.owner AND g.seq = gx.gseq
  RETURNING g.run_id, g.seq, g.total, g.ended, g.succeeded, g.failed, g.cancelled),
gw AS (
  SELECT w.seq, w.name, w.cnt, gu.total, gu.ended, gu.succeeded, gu.failed, gu.cancelled, gu.run_id IS NULL AS missing
  FROM w LEFT JOIN gu ON gu.run_id = coalesce(w.owner, $1) AND gu.seq = w.key::int
  WHERE w.kind = 'group'),
rw AS (SELECT w.*, row_number() OVER (PARTITION BY w.key ORDER BY w.seq) AS rk FROM w WHERE w.kind = 'recv'),
tp AS (SELECT key AS topic, count(*) AS n FROM rw GROUP BY key),
msg AS (
  SELECT m.id, m.topic, m.payload, m.traceparent, row_number() OVER (PARTITION BY m.topic ORDER BY m.id) AS rk
  FROM tp CROSS JOIN LATERAL (
    SELECT id, topic, payload, traceparent FROM durable_messages
    WHERE run_id = $1 AND topic = tp.topic AND consumed_at IS NULL
    ORDER BY id LIMIT tp.n) m),
got AS (SELECT rw.seq, rw.name, msg.id AS msg_id, msg.payload, msg.traceparent FROM rw JOIN msg ON msg.topic = rw.key AND msg.rk = rw.rk),
rdl AS (
  SELECT rw.seq, rw.name, rw.due IS NULL AS fresh, coalesce(rw.due, ${plusMs('rw.ms')}) AS deadline
  FROM rw WHERE (rw.due IS NOT NULL OR rw.ms IS NOT NULL) AND rw.seq NOT IN (SELECT seq FROM got)),
cd AS (
  SELECT w.seq, w.name, c.id IS NULL AS missing, c.status, c.output, c.error
  FROM w LEFT JOIN durable_runs c ON c.id = w.key
  WHERE w.kind = 'child' AND (c.id IS NULL OR c.status IN ('SUCCEEDED','FAILED','CANCELLED'))),
sl AS (SELECT seq, name, ${plusMs('ms')} AS wake FROM w WHERE kind = 'sleep' AND due IS NULL),
res AS (
  SELECT seq, name, 'SUCCEEDED' AS status, payload AS output, true AS resolves FROM got
  UNION ALL
  SELECT seq, name, CASE WHEN deadline <= ${DUE_BY} THEN 'SUCCEEDED' ELSE 'WAITING' END,
         CASE WHEN deadline <= ${DUE_BY} THEN 'null'::jsonb ELSE jsonb_build_object('deadline', ${dateJson('deadline')}) END,
         deadline <= ${DUE_BY}
  FROM rdl WHERE fresh OR deadline <= ${DUE_BY}
  UNION ALL
  SELECT seq, name, 'SUCCEEDED',
         CASE WHEN missing THEN jsonb_build_object('status', 'MISSING')
              ELSE jsonb_build_object('status', status, 'output', output, 'error', error) END,
         true
  FROM cd
  UNION ALL
  SELECT seq, name, 'SUCCEEDED',
         CASE WHEN missing THEN jsonb_build_object('missing', true)
              ELSE jsonb_build_object('total', total, 'ended', ended, 'succeeded', succeeded, 'failed', failed, 'cancelled', cancelled) END, true
  FROM gw WHERE missing OR ended >= cnt
  UNION ALL
  SELECT seq, name, 'SUCCEEDED', ${dateJson('wake')}, false FROM sl)`;
};

/** RESOLVE_WAITS' CTE `nxt` (waits.ts): when a suspended run is due again, the earliest timer or now() + `ms` (the re-check). */
export const nextWake = (ms: string) => `nxt AS (
  SELECT least(min(t), now() + ${ms}::float8 * interval '1 millisecond') AS at FROM (
    SELECT wake AS t FROM sl
    UNION ALL SELECT due FROM w WHERE kind = 'sleep' AND due IS NOT NULL
    UNION ALL SELECT deadline FROM rdl) x)`;
