/**
 * nestjs-durable as the benchmark uses it: one "host" per process (an engine, its counted pool,
 * the workload registered), shared by the in-process runner (--processes 1) and the child
 * worker / enqueuer processes (ours-child.ts).
 *
 * The library is imported as `nestjs-durable/engine` (the Nest-free entry point), from its source:
 * bench/tsconfig.json maps it to libs/durable/src/engine.ts, which tsx follows, so no build is
 * needed and no Nest is loaded. Steps are Durable.step calls, the same durable operation a
 * @Step() method makes. The library's own dependency (`pg`) resolves from the repository root's
 * node_modules, because Node resolves a bare import from the importing file's directory; bench's
 * own `pg` is used only by the harness.
 */
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { writePoolSize } from '../figures.js';
import { Durable, DurableEngine, engineStatements, WorkflowRegistry } from 'nestjs-durable/engine';
import { applyMigrations } from '../../../libs/durable/src/embedded-postgres/migrations.js';

export const WORKFLOW = 'bench';
export const QUEUE = 'default';
/** Queue nobody serves: the enqueue-rate measurements insert there, so no worker ever drains them. */
export const UNSERVED_QUEUE = 'bench_enqueue_only';

/** What a host needs to know; plain data (it crosses the IPC channel to child processes). */
export interface HostConfig {
  url: string;
  steps: number;
  concurrency: number;
  dbWrite: boolean;
  /** false: this process only enqueues and reads (engine option worker: false). */
  worker: boolean;
  /** Engine option history (run event rows). */
  history: boolean;
  /** @Workflow({ deleteOnSuccess }): a run that succeeds is deleted by its end (not kept). */
  deleteOnSuccess?: boolean;
  /** Engine option pollIntervalMs; undefined = the engine default (1000 ms). */
  pollIntervalMs?: number;
  /** Size of the engine's pool. */
  poolSize: number;
  /**
   * Experiment (not an engine option): send the engine's statements as named prepared statements
   * (pg's { name, text, values }), so Postgres parses and plans each once per connection instead of
   * on every call. Measures what that engine change would give.
   */
  prepared?: boolean;
  /** false: the engine option telemetry { traces: false, metrics: false } (the telemetry bench's "app" mode). */
  telemetry?: boolean;
  /** The engine's warnings and errors to stderr (and kept in OursHost.warnings); by default the engine logs nothing. */
  logWarnings?: boolean;
}

/**
 * A MariaDB/MySQL URL (mysql:// or mariadb://): the engine then gets the URL itself (its own `mariadb` pool of
 * `poolSize`), so its statements are not counted and there is no LISTEN session (wake-ups across processes come
 * from its poll). --db-write and `prepared` are Postgres-only.
 */
export const isMysqlUrl = (url: string) => /^(mysql|mariadb):/i.test(url);

// ---- statement counting --------------------------------------------------------------------

/** The engine's fixed statements by SQL text → their name, upper-cased as in the reports (CLAIM, INSERT_STEPS, …). */
const NAMES = new Map([...engineStatements()].map(([name, text]) => [text, name.replace(/^durable_/, '').toUpperCase()]));
/** Name of a statement the engine sent (its declared name, as in store/*.ts). */
export function statementName(text: string): string {
  return NAMES.get(text) ?? `other: ${text.replace(/\s+/g, ' ').trim().slice(0, 60)}`;
}

export type StatementCounts = Record<string, number>;

export function addCounts(into: StatementCounts, from: StatementCounts): StatementCounts {
  for (const [k, v] of Object.entries(from)) into[k] = (into[k] ?? 0) + v;
  return into;
}

export function diffCounts(after: StatementCounts, before: StatementCounts): StatementCounts {
  const out: StatementCounts = {};
  for (const [k, v] of Object.entries(after)) if (v - (before[k] ?? 0)) out[k] = v - (before[k] ?? 0);
  return out;
}

/**
 * The engine's pool, with pool.query wrapped to count statements by name. Every statement the
 * engine sends outside a transactional step goes through pool.query (store/sql-client.ts,
 * pgSqlClient), and is one autocommit transaction. The LISTEN connection is not counted.
 */
/** The claims this process sent: how many, how many found nothing to claim, and their summed round trip. */
export interface ClaimStats {
  n: number;
  empty: number;
  ms: number;
}

/** One statement the engine sent: its name (statementName), when it was sent and answered (performance.now()), the rows it returned. */
export type StatementSpan = (name: string, sentMs: number, doneMs: number, rows: number) => void;

function countedPool(
  url: string,
  max: number,
  counts: StatementCounts,
  claims: ClaimStats,
  prepared = false,
  onStatement?: StatementSpan,
): pg.Pool {
  const pool = new pg.Pool({
    connectionString: url,
    application_name: 'nestjs-durable',
    max,
    connectionTimeoutMillis: 10_000,
    idleTimeoutMillis: 30_000,
  });
  pool.on('error', () => {});
  const query = pool.query.bind(pool) as (...a: unknown[]) => unknown;
  (pool as unknown as { query: unknown }).query = (text: unknown, ...rest: unknown[]) => {
    const sql = typeof text === 'string' ? text : (text as { text: string }).text;
    const name = statementName(sql);
    counts[name] = (counts[name] ?? 0) + 1;
    const sent =
      prepared && typeof text === 'string' && NAMES.has(sql) && Array.isArray(rest[0])
        ? query({ name: `bench_${name}`, text: sql, values: rest[0] }, ...rest.slice(1))
        : query(text, ...rest);
    if ((onStatement || name === 'CLAIM') && sent instanceof Promise) {
      const t0 = performance.now();
      sent.then(
        (r: pg.QueryResult) => {
          const t1 = performance.now();
          onStatement?.(name, t0, t1, r.rowCount ?? 0);
          if (name !== 'CLAIM') return;
          claims.n++;
          claims.ms += t1 - t0;
          if (!r.rowCount) claims.empty++;
        },
        () => {},
      );
    }
    return sent;
  };
  return pool;
}

// ---- the workload --------------------------------------------------------------------------

/**
 * One engine with the workload registered: N x k trivial steps (each optionally INSERTs one row
 * through its own pool, like the DBOS side). `onDone(id)` is called once a run has finished in
 * this process (its end is written), for runs this process executed; without it nothing waits.
 */
export class OursHost {
  readonly counts: StatementCounts = {};
  readonly claims: ClaimStats = { n: 0, empty: 0, ms: 0 };
  /** Statements the step bodies sent (--db-write), not the engine's. */
  userWrites = 0;
  readonly engine: DurableEngine;
  /** Warnings and errors the engine logged (with cfg.logWarnings). */
  readonly warnings: string[] = [];
  private readonly pool?: pg.Pool;
  private readonly writePool?: pg.Pool;

  constructor(
    readonly cfg: HostConfig,
    onDone?: (id: string) => void,
    /** Called when an execution of a run begins (the jobs comparison's start latency). */
    onStart?: (id: string) => void,
    /** Called for every statement the engine's pool answered (drain-timeline). */
    onStatement?: StatementSpan,
  ) {
    const mysql = isMysqlUrl(cfg.url);
    if (mysql && (cfg.dbWrite || cfg.prepared)) throw new Error('--db-write and prepared are Postgres-only in the bench');
    if (!mysql) this.pool = countedPool(cfg.url, cfg.poolSize, this.counts, this.claims, cfg.prepared, onStatement);
    if (cfg.dbWrite && cfg.worker) this.writePool = new pg.Pool({ connectionString: cfg.url, max: writePoolSize(cfg.concurrency) });
    const registry = new WorkflowRegistry();
    const writePool = this.writePool;
    const stepBody = async (id: string, i: number) => {
      if (writePool) {
        this.userWrites++;
        await writePool.query('INSERT INTO bench_step_write (workflow_id, step) VALUES ($1, $2)', [id, i]);
      }
      return i;
    };
    registry.register({
      name: WORKFLOW,
      queue: QUEUE,
      options: cfg.deleteOnSuccess ? { deleteOnSuccess: true } : {},
      run: async (input: unknown) => {
        const id = Durable.runId();
        onStart?.(id);
        // Resolves when the worker has written the run's end (or after an hour).
        if (onDone) void this.engine.waitLocal(id, 3_600_000).then(() => onDone(id));
        for (let i = 0; i < cfg.steps; i++) await Durable.step('benchStep', () => stepBody(id, i));
        return (input as string).length;
      },
    });
    const note = (level: string) => (m: string) => {
      this.warnings.push(`${level}: ${m}`);
      process.stderr.write(`  [engine ${level}] ${m}\n`);
    };
    this.engine = new DurableEngine({
      registry,
      ...(this.pool ? { connection: this.pool as never } : { connection: cfg.url, poolSize: cfg.poolSize }),
      options: {
        ...(cfg.logWarnings ? { logger: { log() {}, warn: note('warn'), error: note('error') } } : {}),
        worker: cfg.worker,
        concurrency: cfg.concurrency,
        history: cfg.history,
        ...(cfg.pollIntervalMs ? { pollIntervalMs: cfg.pollIntervalMs } : {}),
        ...(cfg.telemetry === false ? { telemetry: { traces: false, metrics: false } } : {}),
      },
    });
  }

  start(): Promise<void> {
    return this.engine.start();
  }

  async stop(): Promise<void> {
    await this.engine.stop();
    await this.pool?.end().catch(() => {});
    await this.writePool?.end().catch(() => {});
  }
}

// ---- schema --------------------------------------------------------------------------------

const MIGRATIONS = fileURLToPath(new URL('../../../prisma/migrations/', import.meta.url));

/**
 * Creates the tables the way an app does (the library's migration applier runs what `prisma
 * migrate deploy` runs; the migrations include the example app's tables, which the bench does not
 * touch), plus the table the --db-write steps insert into.
 */
export async function createSchema(url: string): Promise<void> {
  await applyMigrations(url, MIGRATIONS);
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    await c.query('CREATE TABLE bench_step_write (id bigserial PRIMARY KEY, workflow_id text NOT NULL, step int NOT NULL)');
  } finally {
    await c.end();
  }
}

/** The engine's fixed statements by their report name (CLAIM, INSERT_RUN, …), for the statement-level measurements. */
export const SQL: Record<string, string> = Object.fromEntries([...NAMES].map(([text, name]) => [name, text]));
