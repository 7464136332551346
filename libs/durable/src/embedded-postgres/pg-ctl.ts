import { spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { pgBinaries } from './binaries.js';
import { readPostmasterPid } from './postmaster-pid.js';
import type { ServerUser } from './server-user.js';

/** The server's log (pg_ctl -l): inside the data folder, the one place the server's user can write to. */
export const serverLog = (dataDir: string) => join(dataDir, 'server.log');

async function pgCtl(args: string[], dataDir: string, user: ServerUser | undefined): Promise<{ code: number | null; output: string }> {
  const { pgCtl: bin } = await pgBinaries();
  // cwd in the data folder: the server's user may not be allowed into this process's cwd.
  const child = spawn(bin, [...args, '-D', dataDir], {
    cwd: dataDir,
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, LC_MESSAGES: 'C' },
    ...(user && { uid: user.uid, gid: user.gid }),
  });
  let output = '';
  child.stdout.on('data', (d: Buffer) => (output += d.toString()));
  child.stderr.on('data', (d: Buffer) => (output += d.toString()));
  const code = await new Promise<number | null>((resolve, reject) => {
    child.once('error', reject);
    child.once('close', resolve);
  });
  return { code, output: output.trim() };
}

function logTail(dataDir: string, lines = 15): string {
  const file = serverLog(dataDir);
  return existsSync(file) ? readFileSync(file, 'utf8').trimEnd().split('\n').slice(-lines).join('\n') : '(no server log)';
}

/**
 * `pg_ctl start -w`: the server detaches into its own session (Ctrl-C in this terminal does not
 * reach it, so the app can drain its steps first) and outlives this process unless stopped.
 */
export async function pgCtlStart(dataDir: string, user: ServerUser | undefined): Promise<void> {
  const r = await pgCtl(['start', '-w', '-t', '60', '-s', '-l', serverLog(dataDir)], dataDir, user);
  if (r.code !== 0) {
    throw new Error(
      `The embedded Postgres in ${dataDir} did not start (pg_ctl exit ${r.code}): ${r.output}\n` +
        `Last lines of ${serverLog(dataDir)}:\n${logTail(dataDir)}\n` +
        `If this folder is broken or from another Postgres version, delete it to start over (its data is lost).`,
    );
  }
}

/** `pg_ctl stop -m fast -w`: open sessions are ended, then a clean shutdown. No server running is fine. */
export async function pgCtlStop(dataDir: string, user: ServerUser | undefined): Promise<void> {
  if (!readPostmasterPid(dataDir)) return;
  const r = await pgCtl(['stop', '-m', 'fast', '-w', '-t', '60', '-s'], dataDir, user);
  if (r.code !== 0 && readPostmasterPid(dataDir)) {
    throw new Error(`Stopping the embedded Postgres in ${dataDir} failed (pg_ctl exit ${r.code}): ${r.output}\n${logTail(dataDir)}`);
  }
}
