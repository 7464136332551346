import { existsSync, mkdirSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { pgBinaries } from './binaries.js';
import { initialiseCluster } from './initialise.js';
import { pgCtlStart } from './pg-ctl.js';
import { freePort, isPortFree } from './ports.js';
import { readPostmasterPid } from './postmaster-pid.js';
import { assertReachable, findPostgresUser, runsAsRoot, serverUser, type ServerUser } from './server-user.js';

export interface RunningServer {
  port: number;
  pid: number;
  /** This call initialised the data folder (the first start). */
  created: boolean;
  /** This call started the server; false: it was running already (another process started it). */
  started: boolean;
  user: ServerUser | undefined;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * The server on `dataDir`, running: found running (its postmaster.pid says where), or started
 * with pg_ctl, after creating the cluster if the folder has none (`port` then: the port to
 * record in it; default a free one). Call it holding the startup lock.
 */
export async function ensureServer(dataDir: string, port?: number): Promise<RunningServer> {
  const running = await waitWhileInTransition(dataDir);
  if (running) {
    if (await isPortFree(running.port)) {
      throw new Error(
        `${join(dataDir, 'postmaster.pid')} names process ${running.pid}, which runs but does not listen on port ${running.port}. ` +
          `If it is not a Postgres server of this folder (a process id reused after a reboot), delete that file and start again.`,
      );
    }
    return { port: running.port, pid: running.pid, created: false, started: false, user: serverUser() };
  }

  let created = false;
  if (!existsSync(join(dataDir, 'PG_VERSION'))) {
    if (existsSync(dataDir) && readdirSync(dataDir).length > 0) {
      throw new Error(
        `${dataDir} is not empty and holds no Postgres cluster (no PG_VERSION): move it away, or point EMBEDDED_PG_DIR elsewhere.`,
      );
    }
    mkdirSync(dirname(dataDir), { recursive: true });
    if (runsAsRoot()) await assertServerCanReach(dataDir, findPostgresUser());
    await initialiseCluster(dataDir, port ?? (await freePort()));
    created = true;
  }
  const user = serverUser();
  if (user) await assertServerCanReach(dataDir, user);
  const configured = configuredPort(dataDir);
  if (!(await isPortFree(configured))) {
    throw new Error(
      `Port ${configured} of the embedded Postgres (port = ${configured} in ${join(dataDir, 'postgresql.conf')}) is in use by another program. ` +
        `Stop that program, or edit that line to give the embedded Postgres another port.`,
    );
  }
  await pgCtlStart(dataDir, user);
  const pid = readPostmasterPid(dataDir);
  if (!pid) throw new Error(`The embedded Postgres in ${dataDir} started but has no postmaster.pid: see ${join(dataDir, 'server.log')}`);
  return { port: pid.port, pid: pid.pid, created, started: true, user };
}

/** As root: the server's user must reach the data folder and the binaries. */
async function assertServerCanReach(dataDir: string, user: ServerUser | null): Promise<void> {
  assertReachable(dataDir, user);
  assertReachable((await pgBinaries()).postgres, user);
}

/** A server that is starting or stopping (another process at work, or a crash-recovery) is waited for. */
async function waitWhileInTransition(dataDir: string) {
  for (const until = Date.now() + 60_000; ; await sleep(100)) {
    const pid = readPostmasterPid(dataDir);
    if (!pid || pid.status === 'ready') return pid;
    if (Date.now() > until)
      throw new Error(
        `The embedded Postgres in ${dataDir} (pid ${pid.pid}) stayed "${pid.status}" for 60 s: see ${join(dataDir, 'server.log')}`,
      );
  }
}

/** The port the cluster listens on: the last `port =` of postgresql.conf and postgresql.auto.conf. */
function configuredPort(dataDir: string): number {
  let port = 5432; // Postgres's default, if no file sets one
  for (const file of ['postgresql.conf', 'postgresql.auto.conf']) {
    const path = join(dataDir, file);
    if (!existsSync(path)) continue;
    for (const m of readFileSync(path, 'utf8').matchAll(/^\s*port\s*=\s*'?(\d+)'?/gm)) port = Number(m[1]);
  }
  return port;
}
