import { readFileSync } from 'node:fs';
import { join } from 'node:path';

/** What Postgres writes to <data dir>/postmaster.pid while it runs. */
export interface PostmasterPid {
  pid: number;
  port: number;
  /** "starting", "ready", "stopping" (or "standby"). */
  status: string;
}

/**
 * The server that runs on `dataDir`, from its postmaster.pid (lines: pid, data dir, start time,
 * port, socket dir, listen address, shared memory key, status). null when there is no such file
 * or its process is gone (a server killed with SIGKILL leaves the file behind).
 */
export function readPostmasterPid(dataDir: string): PostmasterPid | null {
  let lines: string[];
  try {
    lines = readFileSync(join(dataDir, 'postmaster.pid'), 'utf8').split('\n');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw err;
  }
  const pid = Number(lines[0]);
  if (!Number.isInteger(pid) || pid <= 0 || !isAlive(pid)) return null;
  return { pid, port: Number(lines[3]), status: (lines[7] ?? '').trim() || 'starting' };
}

/**
 * Whether process `pid` runs. A zombie (it exited, and its parent has not reaped it: a postmaster
 * SIGKILLed after pg_ctl detached it, under a PID 1 that reaps nothing) answers signal 0 like a
 * live process; on Linux its state in /proc says it is dead.
 */
export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EPERM') return false;
  }
  return !isZombie(pid);
}

function isZombie(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) === 'Z';
  } catch {
    return false; // no /proc (not Linux), or the process is gone
  }
}
