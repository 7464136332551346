// The embedded Postgres from the command line: `npm run embedded-pg -- <command> [--dir D] [--port P]`
//   status   is a server running on the folder? (pid, URL)
//   start    starts it (creating the cluster, on --port or a free one, if the folder has none) and
//            leaves it running; prints {"url","pid","port","started"} as JSON. No migrations.
//   stop     stops it, whoever uses it (their sessions end).
// --dir: default EMBEDDED_PG_DIR or .data/postgres. The test suite starts its own server with this.
import { resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { serverUrl } from './embedded-postgres.js';
import { pgCtlStop } from './pg-ctl.js';
import { readPostmasterPid } from './postmaster-pid.js';
import { ensureServer } from './server.js';
import { serverUser } from './server-user.js';
import { acquireStartupLock } from './startup-lock.js';

const { positionals, values } = parseArgs({ allowPositionals: true, options: { dir: { type: 'string' }, port: { type: 'string' } } });
const command = positionals[0];
const dataDir = resolve(values.dir ?? (process.env.EMBEDDED_PG_DIR || '.data/postgres'));
const log = (m: string) => process.stderr.write(`${m}\n`);

async function main(): Promise<void> {
  const unlock = command === 'status' ? () => {} : await acquireStartupLock(`${dataDir}.lock`, undefined, log);
  try {
    if (command === 'start') {
      const s = await ensureServer(dataDir, values.port ? Number(values.port) : undefined);
      console.log(JSON.stringify({ url: serverUrl(s.port), pid: s.pid, port: s.port, started: s.started }));
    } else if (command === 'stop') {
      const running = readPostmasterPid(dataDir);
      await pgCtlStop(dataDir, serverUser());
      log(running ? `stopped the embedded Postgres in ${dataDir} (pid ${running.pid})` : `no embedded Postgres runs in ${dataDir}`);
    } else if (command === 'status') {
      const running = readPostmasterPid(dataDir);
      log(
        running
          ? `running in ${dataDir}: pid ${running.pid}, ${running.status}, ${serverUrl(running.port)}`
          : `no embedded Postgres runs in ${dataDir}`,
      );
      process.exitCode = running ? 0 : 3; // like pg_ctl status
    } else {
      log('usage: npm run embedded-pg -- status|start|stop [--dir <data folder>] [--port <port, for a new cluster>]');
      process.exitCode = 2;
    }
  } finally {
    unlock();
  }
}

await main().catch((err: Error) => {
  log(err.message);
  process.exitCode = 1;
});
