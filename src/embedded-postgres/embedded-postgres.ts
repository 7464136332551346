import { mkdirSync } from 'node:fs';
import { resolve } from 'node:path';
import { PGlite } from '@electric-sql/pglite';
import { PGLiteSocketServer } from '@electric-sql/pglite-socket';
import { lockDataDir } from './data-dir-lock.js';
import { applyMigrations, type MigrationResult } from './migrations.js';
import { fanOutNotifications } from './notify-fan-out.js';
import { pinUntilSync } from './pin-until-sync.js';

export interface EmbeddedPostgresOptions {
  /** Where the database files live. Default ./.data/pglite (relative to the working directory). */
  dataDir?: string;
  /** Prisma migrations folder applied at startup. Default ./prisma/migrations. */
  migrationsDir?: string;
  /** Port on 127.0.0.1; 0 picks a free one. Default 0. */
  port?: number;
  /** Sockets the server accepts at once: make it at least the sum of every pool + 1 (LISTEN). */
  maxConnections: number;
  log?: (message: string) => void;
}

export interface EmbeddedPostgres {
  /** postgres:// URL of the socket server, for Prisma and the library alike. */
  url: string;
  dataDir: string;
  migrations: MigrationResult;
  /** Milliseconds from call to ready (open/create the data folder, migrate, listen). */
  startupMs: number;
  /** Closes the sockets, then the database (flushes it to disk). */
  stop(): Promise<void>;
}

/**
 * Postgres inside this process, for development and the quick start: PGlite (Postgres compiled
 * to WebAssembly) served over the Postgres wire protocol on 127.0.0.1, so Prisma's pg adapter
 * and the library's pg pool connect to it as to any server. See README "Embedded mode".
 */
export async function startEmbeddedPostgres(options: EmbeddedPostgresOptions): Promise<EmbeddedPostgres> {
  const started = performance.now();
  const dataDir = resolve(options.dataDir ?? '.data/pglite');
  const migrationsDir = resolve(options.migrationsDir ?? 'prisma/migrations');
  const log = options.log ?? (() => {});
  const unlock = lockDataDir(dataDir);
  let db: PGlite | undefined;
  try {
    mkdirSync(dataDir, { recursive: true }); // PGlite creates only the last path segment
    db = await PGlite.create({ dataDir });
    const migrations = await applyMigrations(db, migrationsDir);
    if (migrations.applied.length) log(`applied migrations: ${migrations.applied.join(', ')}`);
    for (const m of migrations.modified) log(`warning: migration ${m} changed after it was applied; the embedded database keeps the old version (delete ${dataDir} to start over)`);

    const server = new PGLiteSocketServer({ db, host: '127.0.0.1', port: options.port ?? 0, maxConnections: options.maxConnections });
    pinUntilSync(server);
    await server.start();
    fanOutNotifications(db, server);
    const url = `postgresql://postgres:postgres@${server.getServerConn()}/postgres?sslmode=disable`;
    const pglite = db;
    let stopping: Promise<void> | undefined;
    return {
      url,
      dataDir,
      migrations,
      startupMs: Math.round(performance.now() - started),
      stop: () =>
        (stopping ??= (async () => {
          await server.stop();
          await pglite.close();
          unlock();
        })()),
    };
  } catch (err) {
    await db?.close().catch(() => {});
    unlock();
    throw err;
  }
}
