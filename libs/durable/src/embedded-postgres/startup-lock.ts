import { mkdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { isAlive } from './postmaster-pid.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * A lock file next to the data folder (`<dir>.lock`, holding the owner's pid) that serializes
 * starting, attaching to and stopping the server among the processes of this machine: two
 * first starts would both run initdb, and a process that attaches while the last user stops the
 * server would find it gone. The file of a process that died (even by SIGKILL) is taken over.
 * Returns the function that releases it.
 */
export async function acquireStartupLock(file: string, timeoutMs = 90_000, log: (m: string) => void = () => {}): Promise<() => void> {
  const until = Date.now() + timeoutMs;
  let reported = 0;
  mkdirSync(dirname(file), { recursive: true });
  for (;;) {
    try {
      writeFileSync(file, String(process.pid), { flag: 'wx' });
      return () => {
        try {
          if (readFileSync(file, 'utf8') === String(process.pid)) rmSync(file);
        } catch {
          // already gone
        }
      };
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    }
    const owner = readOwner(file);
    if (owner === 'gone') continue;
    if (owner === 'being written') {
      await sleep(20);
      continue;
    }
    if (owner === 'stale' || !isAlive(owner)) {
      // Its process is gone. (Two processes that find the same stale file at the same instant
      // may both get through; the worst case is a clear error from initdb or pg_ctl, which
      // refuses a second server on the folder.)
      rmSync(file, { force: true });
      continue;
    }
    if (owner === process.pid) throw new Error(`${file} is already held by this process`);
    if (Date.now() > until) {
      throw new Error(
        `Process ${owner} has held ${file} for over ${timeoutMs / 1000} s while it starts or stops the embedded Postgres. ` +
          `If it hangs, stop it; if that process is not an example process, delete ${file}.`,
      );
    }
    if (!reported++) log(`waiting for process ${owner}, which is starting or stopping the embedded Postgres (${file})…`);
    await sleep(100);
  }
}

/** The owner's pid; 'being written' between its creation and its content (briefly); 'stale' if it stays empty. */
function readOwner(file: string): number | 'gone' | 'being written' | 'stale' {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch {
    return 'gone';
  }
  const pid = Number(text);
  if (text && Number.isInteger(pid) && pid > 0) return pid;
  try {
    return Date.now() - statSync(file).mtimeMs > 2_000 ? 'stale' : 'being written';
  } catch {
    return 'gone';
  }
}
