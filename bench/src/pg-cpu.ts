/**
 * CPU time of the local PostgreSQL server, read from /proc (Linux only).
 *
 * A snapshot records utime+stime of every process whose comm is "postgres".
 * The delta between two snapshots is split into:
 *   - db:     client backends connected to the database under test
 *   - aux:    server-wide processes (postmaster, walwriter, checkpointer,
 *             background writer, autovacuum, ...): work the run causes but
 *             cannot be attributed to one database
 *   - other:  backends of other databases (someone else's load; excluded)
 * Backends that exit between the two snapshots are lost, so take the "after"
 * snapshot before closing the peer's connection pools.
 */
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';

let clkTck: number | undefined;
function ticksPerSecond(): number {
  if (clkTck === undefined) {
    try {
      clkTck = Number(execFileSync('getconf', ['CLK_TCK']).toString().trim()) || 100;
    } catch {
      clkTck = 100;
    }
  }
  return clkTck;
}

interface ProcSample {
  ticks: number;
  starttime: string;
  title: string;
}

export type PgCpuSnapshot = Map<number, ProcSample>;

/** CPU ticks (user + system) and start time of process `pid`, from /proc/<pid>/stat. */
function procStat(pid: number): { ticks: number; starttime: string } {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  // fields[0] is field 3 (state); utime=14, stime=15, starttime=22
  return { ticks: Number(fields[14 - 3]) + Number(fields[15 - 3]), starttime: fields[22 - 3] };
}

/** CPU seconds (user + system) process `pid` has used so far. */
export function processCpuSeconds(pid: number): number {
  return procStat(pid).ticks / ticksPerSecond();
}

export function pgCpuAvailable(): boolean {
  try {
    readdirSync('/proc');
    return snapshotPgCpu().size > 0;
  } catch {
    return false;
  }
}

export function snapshotPgCpu(): PgCpuSnapshot {
  const snap: PgCpuSnapshot = new Map();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const pid = Number(entry);
    try {
      const comm = readFileSync(`/proc/${pid}/comm`, 'utf8').trim();
      if (comm !== 'postgres') continue;
      const { ticks, starttime } = procStat(pid);
      const title = readFileSync(`/proc/${pid}/cmdline`, 'utf8').replace(/\0/g, ' ').trim();
      snap.set(pid, { ticks, starttime, title });
    } catch {
      // process vanished while reading
    }
  }
  return snap;
}

/** Database name of a client backend's process title, or undefined for a server process. */
export function backendDatabase(title: string): string | undefined {
  // e.g. "postgres: 15/main: postgres bench_dbos 127.0.0.1(54321) idle"
  const m = /(\S+) (\S+) (?:\S+\(\d+\)|\[local\])(?: |$)/.exec(title);
  return m ? m[2] : undefined;
}

export interface PgCpuDelta {
  dbMs: number;
  auxMs: number;
  otherMs: number;
}

export function pgCpuDelta(before: PgCpuSnapshot, after: PgCpuSnapshot, dbName: string): PgCpuDelta {
  const msPerTick = 1000 / ticksPerSecond();
  const out: PgCpuDelta = { dbMs: 0, auxMs: 0, otherMs: 0 };
  for (const [pid, a] of after) {
    const b = before.get(pid);
    const base = b && b.starttime === a.starttime ? b.ticks : 0;
    const ms = (a.ticks - base) * msPerTick;
    const db = backendDatabase(a.title);
    if (db === undefined) out.auxMs += ms;
    else if (db === dbName) out.dbMs += ms;
    else out.otherMs += ms;
  }
  return out;
}
