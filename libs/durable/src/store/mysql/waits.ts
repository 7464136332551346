/**
 * Durable waits on a MySQL-family database (see waits.ts for the protocol: the run row's
 * available_at is the executor's token; a signal always moves it or makes a WAITING run due).
 * One transaction: lock the held run, take the messages the pending recvs receive (locked), read
 * the children waited for, record what resolved, and suspend the run when nothing did and the
 * token is unchanged. Times come from the database clock read under the run's lock.
 */
import type { ResolveResult, WaitSpec } from '../rows.js';
import type { SqlClient } from '../sql-client.js';
import type { Store } from '../store.js';
import { date, insertHistory, json, marks, NOW, utc } from './sql.js';

/** The codec's form of a Date ({"$durable":"Date","v":"…Z"}), as the PostgreSQL statement writes it. */
const dateValue = (d: Date) => ({ $durable: 'Date', v: d.toISOString() });

interface Resolution {
  seq: number;
  name: string;
  status: 'SUCCEEDED' | 'WAITING';
  output: unknown;
  /** It lets the run go on (a message, a passed deadline, a finished child); a new sleep does not. */
  resolves: boolean;
  message?: { id: number; traceparent: string | null };
}

/** The k-th pending recv of a topic (in seq order) receives the k-th oldest unconsumed message of it. */
async function receive(
  sql: SqlClient,
  runId: string,
  recvs: WaitSpec[],
): Promise<Map<number, { id: number; payload: unknown; traceparent: string | null }>> {
  const got = new Map<number, { id: number; payload: unknown; traceparent: string | null }>();
  const byTopic = new Map<string, WaitSpec[]>();
  for (const w of [...recvs].sort((a, b) => a.seq - b.seq)) byTopic.set(w.key ?? '', [...(byTopic.get(w.key ?? '') ?? []), w]);
  for (const [topic, waits] of byTopic) {
    const msgs = await sql.query<{ id: number | bigint; payload: unknown; traceparent: string | null }>(
      `SELECT id, payload, traceparent FROM durable_messages WHERE run_id = ? AND topic = ? AND consumed_seq IS NULL
       ORDER BY id LIMIT ? FOR UPDATE`,
      [runId, topic, waits.length],
    );
    msgs.forEach((m, i) => got.set(waits[i].seq, { id: Number(m.id), payload: json(m.payload), traceparent: m.traceparent }));
  }
  return got;
}

/** Children waited for that ended (or no longer exist): their outcome, by wait seq. */
async function childOutcomes(sql: SqlClient, children: WaitSpec[]): Promise<Map<number, unknown>> {
  const out = new Map<number, unknown>();
  if (!children.length) return out;
  const ids = children.map((c) => c.key ?? '');
  const rows = await sql.query<{ id: string; status: string; output: unknown; error: unknown }>(
    `SELECT id, status, output, error FROM durable_runs WHERE id IN (${marks(ids.length)})`,
    ids,
  );
  const byId = new Map(rows.map((r) => [r.id, r]));
  for (const c of children) {
    const r = byId.get(c.key ?? '');
    if (!r) out.set(c.seq, { status: 'MISSING' });
    else if (['SUCCEEDED', 'FAILED', 'CANCELLED'].includes(r.status)) {
      out.set(c.seq, { status: r.status, output: json(r.output), error: json(r.error) });
    }
  }
  return out;
}

/**
 * Group waits (Durable.startChildren): each group's wake_at is set to the smallest count waited for,
 * under its row's lock (see groupEnds in sql-fragments.ts); a wait whose count the group's `ended`
 * reached resolves with its counters, and a group that no longer exists (its run was deleted) with {missing: true}.
 */
async function groupOutcomes(sql: SqlClient, runId: string, waits: WaitSpec[]): Promise<Map<number, unknown>> {
  const out = new Map<number, unknown>();
  const groups = new Map<string, { owner: string; seq: number; waits: WaitSpec[] }>();
  for (const w of waits) {
    const owner = w.owner ?? runId;
    const k = `${Number(w.key)}:${owner}`;
    const g = groups.get(k) ?? { owner, seq: Number(w.key), waits: [] };
    g.waits.push(w);
    groups.set(k, g);
  }
  for (const g of groups.values()) {
    const least = Math.min(...g.waits.map((w) => w.count ?? 0));
    await sql.execute(`UPDATE durable_child_groups SET wake_at = ? WHERE run_id = ? AND seq = ?`, [least, g.owner, g.seq]);
    const [row] = await sql.query<Record<string, unknown>>(
      `SELECT total, ended, succeeded, failed, cancelled FROM durable_child_groups WHERE run_id = ? AND seq = ?`,
      [g.owner, g.seq],
    );
    for (const w of g.waits) {
      if (!row) out.set(w.seq, { missing: true });
      else if (Number(row.ended) >= (w.count ?? 0)) {
        out.set(w.seq, {
          total: Number(row.total),
          ended: Number(row.ended),
          succeeded: Number(row.succeeded),
          failed: Number(row.failed),
          cancelled: Number(row.cancelled),
        });
      }
    }
  }
  return out;
}

/** Records the resolutions: new steps inserted, WAITING ones (a recorded deadline) completed; others left alone. Returns those written. */
async function record(sql: SqlClient, runId: string, res: Resolution[]): Promise<Resolution[]> {
  if (!res.length) return [];
  const existing = new Map(
    (
      await sql.query<{ seq: number; status: string }>(
        `SELECT seq, status FROM durable_steps WHERE run_id = ? AND seq IN (${marks(res.length)})`,
        [runId, ...res.map((r) => r.seq)],
      )
    ).map((s) => [Number(s.seq), s.status]),
  );
  const fresh = res.filter((r) => !existing.has(r.seq));
  const completing = res.filter((r) => existing.get(r.seq) === 'WAITING');
  if (fresh.length) {
    await sql.execute(
      `INSERT INTO durable_steps (run_id, seq, name, status, output, attempts, started_at, finished_at)
       VALUES ${fresh.map(() => `(?, ?, ?, ?, ?, 1, ${NOW}, ${NOW})`).join(', ')}`,
      fresh.flatMap((r) => [runId, r.seq, r.name, r.status, JSON.stringify(r.output)]),
    );
  }
  for (const r of completing) {
    await sql.execute(
      `UPDATE durable_steps SET output = ?, finished_at = ${NOW}, status = ? WHERE run_id = ? AND seq = ? AND status = 'WAITING'`,
      [JSON.stringify(r.output), r.status, runId, r.seq],
    );
  }
  return [...fresh, ...completing];
}

export async function resolveWaits(
  store: Store,
  a: { runId: string; epoch: number; token: Date | null; maySuspend: boolean; recheckMs: number; waits: WaitSpec[] },
): Promise<ResolveResult> {
  return store.sql.transaction(async (sql) => {
    const [run] = await sql.query<{ available_at: unknown; queue: string; now: unknown }>(
      `SELECT available_at, queue, ${NOW} AS now FROM durable_runs WHERE id = ? AND lease_epoch = ? AND status = 'RUNNING' FOR UPDATE`,
      [a.runId, a.epoch],
    );
    if (!run) return { held: false, token: null, suspended: null, steps: [] };
    const token = date(run.available_at)!;
    const now = date(run.now)!.getTime();
    const dueBy = now + 1;
    const at = (ms: number) => new Date(now + Math.round(ms));
    const recvs = a.waits.filter((w) => w.kind === 'recv');
    const got = await receive(sql, a.runId, recvs);
    const children = await childOutcomes(
      sql,
      a.waits.filter((w) => w.kind === 'child'),
    );
    const groups = await groupOutcomes(
      sql,
      a.runId,
      a.waits.filter((w) => w.kind === 'group'),
    );
    const res: Resolution[] = [];
    const timers: number[] = [];
    for (const w of a.waits) {
      if (w.kind === 'recv') {
        const m = got.get(w.seq);
        if (m) {
          res.push({ seq: w.seq, name: w.name, status: 'SUCCEEDED', output: m.payload, resolves: true, message: m });
          continue;
        }
        if (w.due === null && w.ms === null) continue;
        const deadline = w.due ?? at(w.ms!);
        timers.push(deadline.getTime());
        if (deadline.getTime() <= dueBy) res.push({ seq: w.seq, name: w.name, status: 'SUCCEEDED', output: null, resolves: true });
        else if (w.due === null) {
          res.push({ seq: w.seq, name: w.name, status: 'WAITING', output: { deadline: dateValue(deadline) }, resolves: false });
        }
      } else if (w.kind === 'child') {
        if (children.has(w.seq)) res.push({ seq: w.seq, name: w.name, status: 'SUCCEEDED', output: children.get(w.seq), resolves: true });
      } else if (w.kind === 'group') {
        if (groups.has(w.seq)) res.push({ seq: w.seq, name: w.name, status: 'SUCCEEDED', output: groups.get(w.seq), resolves: true });
      } else if (w.due === null) {
        const wake = at(w.ms ?? 0);
        timers.push(wake.getTime());
        res.push({ seq: w.seq, name: w.name, status: 'SUCCEEDED', output: dateValue(wake), resolves: false });
      } else {
        timers.push(w.due.getTime());
      }
    }
    const written = await record(sql, a.runId, res);
    for (const r of written) {
      if (r.message)
        await sql.execute(`UPDATE durable_messages SET consumed_seq = ?, consumed_at = ${NOW} WHERE id = ?`, [r.seq, r.message.id]);
    }
    const progressed = written.some((r) => r.resolves);
    let suspended: ResolveResult['suspended'] = null;
    if (a.maySuspend && a.token !== null && token.getTime() === a.token.getTime() && !progressed) {
      const until = new Date(Math.min(...timers, now + a.recheckMs));
      await sql.execute(
        `UPDATE durable_runs SET status = 'WAITING', available_at = ?, lease_owner = NULL, lease_expires_at = NULL, attempt = 0, updated_at = ${NOW}
         WHERE id = ?`,
        [utc(until), a.runId],
      );
      suspended = { until, queue: run.queue };
      await insertHistory(sql, store.history, [
        [
          a.runId,
          'suspended',
          {
            until: until.toISOString(),
            waits: [...a.waits].sort((x, y) => x.seq - y.seq).map((w) => ({ seq: w.seq, kind: w.kind, key: w.key })),
          },
        ],
      ]);
    }
    return {
      held: true,
      token,
      suspended,
      steps: written.map((r) => ({
        seq: r.seq,
        status: r.status,
        output: r.output,
        message: r.message !== undefined,
        traceparent: r.message?.traceparent ?? null,
      })),
    };
  });
}
