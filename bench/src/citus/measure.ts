/**
 * What each server of the citus benchmark spent in a measured window: CPU of its whole process tree,
 * statements it executed (pg_stat_statements, by partition), commits (pg_stat_database) and, on a
 * Citus coordinator, the two-phase commits it made (pg_dist_transaction).
 *
 * CPU of a server = the postmaster's own time + the time of its children it has reaped (cutime,
 * cstime: backends that exited, e.g. a coordinator's connections to a worker node closed with their
 * session) + the time of its live children. The delta of that sum over a window is the server's CPU
 * in the window, whether its backends lived through the window or not.
 */
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import type { BenchNode } from './servers.js';
import { sql } from './servers.js';

let clkTck: number | undefined;
function msPerTick(): number {
  if (clkTck === undefined) {
    try {
      clkTck = Number(execFileSync('getconf', ['CLK_TCK']).toString().trim()) || 100;
    } catch {
      clkTck = 100;
    }
  }
  return 1000 / clkTck;
}

/** Fields of /proc/<pid>/stat after the command name: [0] is field 3 (state). */
function statFields(pid: number): string[] {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  return stat.slice(stat.lastIndexOf(')') + 2).split(' ');
}

/** CPU ms so far of the server whose postmaster is `pid` (see the file comment). */
export function serverCpuMs(pid: number): number {
  const pm = statFields(pid);
  // utime 14, stime 15, cutime 16, cstime 17 (1-based field numbers; fields[0] is field 3)
  let ticks = Number(pm[11]) + Number(pm[12]) + Number(pm[13]) + Number(pm[14]);
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const f = statFields(Number(entry));
      if (Number(f[1]) === pid) ticks += Number(f[11]) + Number(f[12]);
    } catch {
      // gone while reading: its time is in the postmaster's cutime/cstime at the next reading
    }
  }
  return ticks * msPerTick();
}

/** The statements a server executed in the database, by partition ("-" for those naming none), and in all. */
export interface StatementTally {
  total: number;
  byPartition: Record<string, number>;
  /** The kinds of statement (first word), all partitions together. */
  byKind: Record<string, number>;
}

/** Installs pg_stat_statements (in the server's maintenance database, where the view shows every database). */
export async function installStatementCounting(node: BenchNode): Promise<void> {
  await sql(node.url(), 'CREATE EXTENSION IF NOT EXISTS pg_stat_statements');
}

export async function resetStatements(node: BenchNode): Promise<void> {
  await sql(node.url(), 'SELECT pg_stat_statements_reset()');
}

/** The statements executed in database `db` since the last reset (utility statements are not tracked). */
export async function readStatements(node: BenchNode, db: string): Promise<StatementTally> {
  const rows = await sql<{ query: string; calls: string }>(
    node.url(),
    `SELECT query, calls FROM pg_stat_statements WHERE dbid = (SELECT oid FROM pg_database WHERE datname = $1)`,
    [db],
  );
  const out: StatementTally = { total: 0, byPartition: {}, byKind: {} };
  for (const r of rows) {
    const calls = Number(r.calls);
    const p = /durable_p(\d+)\./.exec(r.query)?.[1];
    const key = p === undefined ? '-' : `p${p}`;
    out.total += calls;
    out.byPartition[key] = (out.byPartition[key] ?? 0) + calls;
    const kind = (/^\s*(\w+)/.exec(r.query)?.[1] ?? '?').toUpperCase();
    out.byKind[kind] = (out.byKind[kind] ?? 0) + calls;
  }
  return out;
}

/** Commits in database `db` (pg_stat_database; read after the sessions closed, when their counters are flushed). */
export async function readCommits(node: BenchNode, db: string): Promise<number> {
  const [row] = await sql<{ c: string }>(node.url(), 'SELECT xact_commit AS c FROM pg_stat_database WHERE datname = $1', [db]);
  return Number(row?.c ?? 0);
}

/**
 * Two-phase commits the coordinator made in its database so far: distributed transactions, prepared
 * transactions (one per connection, gid citus_<group>_<pid>_<transaction>_<connection>), and the
 * transactions that prepared on more than one node.
 */
export async function readTwoPhase(
  coordinator: BenchNode,
  db: string,
): Promise<{ transactions: number; prepared: number; multiNode: number }> {
  const [row] = await sql<{ t: string; p: string; m: string }>(
    coordinator.url(db),
    `SELECT count(*)::bigint AS t, coalesce(sum(p), 0)::bigint AS p, count(*) FILTER (WHERE g > 1)::bigint AS m
       FROM (SELECT regexp_replace(gid, '_[0-9]+$', '') AS tx, count(*) AS p, count(DISTINCT groupid) AS g
               FROM pg_dist_transaction GROUP BY 1) t`,
  );
  return { transactions: Number(row.t), prepared: Number(row.p), multiNode: Number(row.m) };
}
