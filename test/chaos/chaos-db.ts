import { execFile, spawn } from 'node:child_process';
import { promisify } from 'node:util';
import { createPool, type Pool as MariaPool } from 'mariadb';
import { createPostgresPool } from 'nestjs-durable';
import type pg from 'pg';
import { createTestDatabase, type TestDatabase } from '../support/db.js';
import { restartPostgres } from './chaos-driver.js';
import { durableTables, SINGLE_SERVER_TABLES, type DurableTables } from './chaos-tables.js';

/** Runs by status, lease owner, and whether they are top-level runs of the workload (the sampler's view). */
export interface SampleRow {
  status: string;
  lease_owner: string | null;
  top: boolean;
  n: number;
}

/**
 * The database of a chaos run, as the driver sees it: the sampler's counts, its connections, an
 * outage that restarts the server, and the judge. The judge is the same on every database: the
 * facts are read by the same PostgreSQL statements (chaos-facts.ts and the others) — from the run's
 * own database on Postgres, and on MariaDB from a Postgres copy of the rows the judge reads, made
 * once the run is over (times in UTC and JSON carried over as they are).
 */
export interface ChaosDb {
  /** Connections the workers may use: [free, max_connections]. */
  connections(): Promise<[number, number]>;
  sample(workflows: string[]): Promise<SampleRow[]>;
  /** Resolves once the server answers again. */
  ping(): Promise<void>;
  /** Restarts the server (the "restart" outage: every session cut). */
  restart(): Promise<void>;
  /** The run's own Postgres pool (the sampler's duplicate-key check reads it), or null. */
  readonly pg: pg.Pool | null;
  /** Pauses a schedule the way the admin API does (every worker sees the new revision). */
  pauseSchedule(id: string): Promise<void>;
  /** Runs not yet SUCCEEDED, FAILED or CANCELLED whose `column` equals `value`. */
  openRuns(column: 'schedule_id' | 'queue', value: string): Promise<number>;
  /** A Postgres pool over what the judge reads. */
  judge(): Promise<pg.Pool>;
  /** The durable tables as the judge's pool names them (the partitions' union in distributed mode). */
  readonly tables: DurableTables;
  close(): Promise<void>;
}

export const isMariaDbUrl = (url: string) => /^(mysql|mariadb):/.test(url);

/** The database at `url`; `partitions`: a Citus coordinator's database in distributed mode with that many partitions. */
export function chaosDb(url: string, partitions: number | null = null): ChaosDb {
  return isMariaDbUrl(url) ? new MariaChaosDb(url) : new PostgresChaosDb(url, durableTables(partitions));
}

class PostgresChaosDb implements ChaosDb {
  readonly pg: pg.Pool;
  constructor(
    url: string,
    readonly tables: DurableTables,
  ) {
    // Idle connections die when Postgres restarts (the next query reconnects); with several hosts it follows the primary.
    this.pg = createPostgresPool(url, { max: 3, connectionTimeoutMillis: 5_000, logger: { log: () => {}, warn: () => {} } });
  }

  async connections(): Promise<[number, number]> {
    const { rows } = await this.pg.query<{ free: number; max: number }>(
      `SELECT current_setting('max_connections')::int AS max,
              current_setting('max_connections')::int - current_setting('superuser_reserved_connections')::int
                - (SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'client backend')::int AS free`,
    );
    return [rows[0].free, rows[0].max];
  }

  async sample(workflows: string[]): Promise<SampleRow[]> {
    const { rows } = await this.pg.query(
      `SELECT status, lease_owner, workflow_name = ANY($1) AS top, count(*)::int AS n FROM ${this.tables.runs} r GROUP BY 1, 2, 3`,
      [workflows],
    );
    return rows as SampleRow[];
  }

  async ping(): Promise<void> {
    await this.pg.query('SELECT 1');
  }

  async pauseSchedule(id: string): Promise<void> {
    await this.pg.query(`UPDATE durable_schedules SET paused = true, revision = revision + 1 WHERE id = $1`, [id]);
  }

  async openRuns(column: 'schedule_id' | 'queue', value: string): Promise<number> {
    const { rows } = await this.pg.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM ${this.tables.runs} r WHERE ${column} = $1 AND status NOT IN ('SUCCEEDED','FAILED','CANCELLED')`,
      [value],
    );
    return rows[0].n;
  }

  restart(): Promise<void> {
    return restartPostgres();
  }

  async judge(): Promise<pg.Pool> {
    return this.pg;
  }

  async close(): Promise<void> {
    await this.pg.end().catch(() => {});
  }
}

/** The tables the judge reads, and their columns on both databases (tags and other array columns are not judged). */
const JUDGED: Record<string, string[]> = {
  durable_runs: [
    'id',
    'workflow_name',
    'queue',
    'status',
    'input',
    'output',
    'error',
    'priority',
    'available_at',
    'order_at',
    'lease_owner',
    'lease_expires_at',
    'lease_epoch',
    'attempt',
    'parent_id',
    'deadline_at',
    'schedule_id',
    'created_at',
    'started_at',
    'finished_at',
    'updated_at',
    'cancel_requested_at',
    'concurrency_key',
    'dedupe_key',
    'debounce_key',
    'debounce_until',
  ],
  durable_steps: [
    'run_id',
    'seq',
    'name',
    'status',
    'output',
    'error',
    'attempts',
    'started_at',
    'finished_at',
    'compensation',
    'compensates',
  ],
  durable_messages: ['id', 'run_id', 'topic', 'payload', 'idempotency_key', 'created_at', 'consumed_seq', 'consumed_at'],
  durable_run_events: ['id', 'run_id', 'kind', 'detail', 'at'],
  durable_stream_chunks: ['run_id', 'stream', 'position', 'origin', 'value'],
  test_ledger: ['run_id', 'step', 'amount', 'pid', 'at'],
  test_step_executions: ['run_id', 'step', 'pid', 'at'],
};

class MariaChaosDb implements ChaosDb {
  readonly pg = null;
  /** The judge reads a Postgres copy of the single server's tables. */
  readonly tables = SINGLE_SERVER_TABLES;
  private readonly pool: MariaPool;
  private copy: { db: TestDatabase; pool: pg.Pool } | null = null;

  constructor(url: string) {
    const u = new URL(url);
    this.pool = createPool({
      host: u.hostname,
      port: Number(u.port || 3306),
      user: decodeURIComponent(u.username),
      password: decodeURIComponent(u.password) || undefined,
      database: u.pathname.slice(1),
      connectionLimit: 3,
      timezone: 'Z',
      initSql: ["SET time_zone = '+00:00'"],
      autoJsonMap: false,
      bigIntAsNumber: true,
      acquireTimeout: 5_000,
      connectTimeout: 2_000,
    });
  }

  async connections(): Promise<[number, number]> {
    const [row] = await this.pool.query<Array<{ max: number; used: number }>>(
      `SELECT @@max_connections AS max, (SELECT count(*) FROM information_schema.PROCESSLIST) AS used`,
    );
    return [Number(row.max) - Number(row.used), Number(row.max)];
  }

  async sample(workflows: string[]): Promise<SampleRow[]> {
    const rows = await this.pool.query<Array<{ status: string; lease_owner: string | null; top: number; n: number }>>(
      `SELECT status, lease_owner, workflow_name IN (?) AS top, count(*) AS n FROM durable_runs GROUP BY 1, 2, 3`,
      [workflows],
    );
    return rows.map((r) => ({ status: r.status, lease_owner: r.lease_owner, top: Number(r.top) === 1, n: Number(r.n) }));
  }

  async ping(): Promise<void> {
    await this.pool.query('SELECT 1');
  }

  async pauseSchedule(id: string): Promise<void> {
    await this.pool.query(`UPDATE durable_schedules SET paused = true, revision = revision + 1 WHERE id = ?`, [id]);
  }

  async openRuns(column: 'schedule_id' | 'queue', value: string): Promise<number> {
    const [row] = await this.pool.query<Array<{ n: number }>>(
      `SELECT count(*) AS n FROM durable_runs WHERE ${column} = ? AND status NOT IN ('SUCCEEDED','FAILED','CANCELLED')`,
      [value],
    );
    return Number(row.n);
  }

  /**
   * Restarts the machine's MariaDB: a shutdown (root over the socket), then mariadbd-safe, detached
   * (it outlives this process). Not `service mariadb restart`: where the server was not started by the
   * init script, its stop cannot log in and the restart fails.
   */
  async restart(): Promise<void> {
    const run = promisify(execFile);
    await run('mariadb-admin', ['shutdown'], { timeout: 120_000 });
    for (let i = 0; i < 300; i++) {
      if (
        !(await run('mariadb-admin', ['ping', '--silent']).then(
          () => true,
          () => false,
        ))
      )
        break;
      await new Promise((r) => setTimeout(r, 100));
    }
    spawn('mariadbd-safe', [], { detached: true, stdio: 'ignore' }).unref();
  }

  async judge(): Promise<pg.Pool> {
    if (this.copy) return this.copy.pool;
    const db = await createTestDatabase('chaos_judge');
    const pool = createPostgresPool(db.url, { max: 2 });
    this.copy = { db, pool };
    for (const [table, columns] of Object.entries(JUDGED)) {
      const rows = await this.pool.query<Array<Record<string, unknown>>>(`SELECT ${columns.join(', ')} FROM ${table}`);
      for (let i = 0; i < rows.length; i += 500) {
        const page = rows.slice(i, i + 500);
        const values = page.map((_, r) => `(${columns.map((__, c) => `$${r * columns.length + c + 1}`).join(', ')})`).join(', ');
        await pool.query(
          `INSERT INTO ${table} (${columns.join(', ')}) VALUES ${values}`,
          page.flatMap((row) => columns.map((c) => carried(row[c]))),
        );
      }
    }
    return pool;
  }

  async close(): Promise<void> {
    await this.pool.end().catch(() => {});
    if (this.copy) {
      await this.copy.pool.end().catch(() => {});
      await this.copy.db.drop();
    }
  }
}

/** A MariaDB value as a Postgres parameter: JSON stays text (cast by its column), a bigint becomes text. */
const carried = (v: unknown): unknown => (typeof v === 'bigint' ? v.toString() : v);
