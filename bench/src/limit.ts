/**
 * The Postgres limit: how many single-row autocommit INSERTs this server
 * commits per second with `clients` concurrent connections. Measured from Node
 * (pg driver, one process) and, when installed, with the real pgbench.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, writeFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import pg from 'pg';
import { databaseName, recreateDatabase } from './db.js';
import type { LimitFigures } from './figures.js';

const execFileP = promisify(execFile);

export interface LimitOpts {
  databaseUrl: string;
  clients?: number;
  seconds?: number;
}

async function createTable(url: string): Promise<void> {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    await c.query('CREATE TABLE IF NOT EXISTS limit_insert (id bigserial PRIMARY KEY, v int NOT NULL)');
  } finally {
    await c.end();
  }
}

async function insertLoop(clients: pg.Client[], ms: number): Promise<number> {
  const deadline = performance.now() + ms;
  let count = 0;
  await Promise.all(
    clients.map(async (c, i) => {
      while (performance.now() < deadline) {
        await c.query('INSERT INTO limit_insert (v) VALUES ($1)', [i]);
        count++;
      }
    }),
  );
  return count;
}

/** Single-row-insert autocommit commits/s measured from Node with `clients` connections. */
export async function measureInsertCommitRate(opts: LimitOpts): Promise<number> {
  const clientsN = opts.clients ?? 16;
  const seconds = opts.seconds ?? 3;
  await recreateDatabase(opts.databaseUrl);
  await createTable(opts.databaseUrl);
  const clients = await Promise.all(
    Array.from({ length: clientsN }, async () => {
      const c = new pg.Client({ connectionString: opts.databaseUrl });
      await c.connect();
      return c;
    }),
  );
  try {
    await insertLoop(clients, 500); // warm-up
    const t0 = performance.now();
    const n = await insertLoop(clients, seconds * 1000);
    return n / ((performance.now() - t0) / 1000);
  } finally {
    await Promise.all(clients.map((c) => c.end()));
  }
}

export async function pgbenchPath(): Promise<string | undefined> {
  try {
    const { stdout } = await execFileP('which', ['pgbench']);
    return stdout.trim() || undefined;
  } catch {
    return undefined;
  }
}

/** The same measurement with the real pgbench (custom script, simple protocol, -j 2). */
export async function measureInsertCommitRatePgbench(opts: LimitOpts & { pgbench: string }): Promise<number> {
  const clientsN = opts.clients ?? 16;
  const seconds = opts.seconds ?? 3;
  await recreateDatabase(opts.databaseUrl);
  await createTable(opts.databaseUrl);
  const dir = mkdtempSync(join(tmpdir(), 'bench-pgbench-'));
  const script = join(dir, 'insert.sql');
  writeFileSync(script, 'INSERT INTO limit_insert (v) VALUES (1);\n');
  const u = new URL(opts.databaseUrl);
  const env = { ...process.env, ...(u.password ? { PGPASSWORD: decodeURIComponent(u.password) } : {}) };
  try {
    const { stdout } = await execFileP(
      opts.pgbench,
      [
        '-n',
        '-f',
        script,
        '-c',
        String(clientsN),
        '-j',
        '2',
        '-T',
        String(seconds),
        '-h',
        u.hostname,
        '-p',
        u.port || '5432',
        '-U',
        decodeURIComponent(u.username || 'postgres'),
        databaseName(opts.databaseUrl),
      ],
      { env },
    );
    const m = /tps = ([\d.]+) \((?:without initial connection time|excluding connections establishing)\)/.exec(stdout);
    if (!m) throw new Error(`could not parse pgbench output:\n${stdout}`);
    return Number(m[1]);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** Both measurements, Node first, then pgbench if installed. */
export async function measureLimit(opts: LimitOpts): Promise<LimitFigures> {
  const clients = opts.clients ?? 16;
  const seconds = opts.seconds ?? 3;
  const notes: string[] = [];
  const nodeRate = await measureInsertCommitRate({ ...opts, clients, seconds });
  let pgbenchRate: number | undefined;
  const pgbench = await pgbenchPath();
  if (pgbench) {
    try {
      pgbenchRate = await measureInsertCommitRatePgbench({ ...opts, clients, seconds, pgbench });
    } catch (e) {
      notes.push(`pgbench failed: ${(e as Error).message.split('\n')[0]}`);
    }
  } else {
    notes.push('pgbench not installed; Node measurement only');
  }
  return { nodeInsertCommitsPerSec: nodeRate, pgbenchInsertCommitsPerSec: pgbenchRate, clients, seconds, notes };
}
