/**
 * The two databases of the databases benchmark behind one interface: a fresh database, the runs'
 * timings, waiting for the workers, and the idle cost (statements per second at the server, and the
 * engine's own counted at its pool or by a relay in front of MariaDB).
 */
import { createSchema, diffCounts, type HostConfig, type StatementCounts } from './peers/ours-lib.js';
import { databaseName, dropDatabase, readDbStats, recreateDatabase, withClient } from './db.js';
import { guardStall } from './stall.js';
import { readTimings, type Timing } from './peers/ours-measure.js';
import { untilDone } from './peers/ours.js';
import { startWorkers, type WorkerSet } from './peers/ours-workers.js';
import { countingProxy, diffCommands } from './mysql-count-proxy.js';
import {
  dropMariaDatabase,
  mariaConnect,
  mariaStatusSummary,
  otherConnections,
  questions,
  readMariaTimings,
  recreateMariaDatabase,
  withMaria,
} from './mariadb.js';
import { sleep, type Db, type IdleFigures } from './databases-model.js';

// ---- the two databases behind one interface ---------------------------------------------------

export interface Side {
  db: Db;
  url: string;
  recreate(): Promise<void>;
  drop(): Promise<void>;
  timings(prefix: string): Promise<Timing[]>;
  /** Per run with the prefix: its first step row's started_at − the run's created_at, ms. */
  firstStepDelays(prefix: string): Promise<number[]>;
  /** Waits until the workers finished `n` runs; fails with the runs by status if nothing finishes for a minute. */
  until(ws: WorkerSet, n: number, log?: (m: string) => void): Promise<void>;
  idle(cfg: HostConfig, seconds: number, log: (m: string) => void): Promise<IdleFigures>;
}

export function postgresSide(url: string): Side {
  return {
    db: 'postgres',
    url,
    recreate: async () => {
      await recreateDatabase(url);
      await createSchema(url);
    },
    drop: () => dropDatabase(url),
    timings: (prefix) => readTimings(url, prefix),
    firstStepDelays: (prefix) =>
      withClient(url, async (c) => {
        const { rows } = await c.query<{ d: string }>(
          `SELECT extract(epoch FROM min(s.started_at) - r.created_at) * 1000 AS d
             FROM durable_runs r JOIN durable_steps s ON s.run_id = r.id WHERE r.id LIKE $1 GROUP BY r.id, r.created_at`,
          [`${prefix}%`],
        );
        return rows.map((r) => Number(r.d));
      }),
    until: (ws, n, log) => untilDone(ws, n, url, log),
    idle: (cfg, seconds, log) => postgresIdle(url, cfg, seconds, log),
  };
}

export function mariadbSide(url: string): Side {
  return {
    db: 'mariadb',
    url,
    recreate: () => recreateMariaDatabase(url),
    drop: () => dropMariaDatabase(url),
    timings: (prefix) => readMariaTimings(url, prefix),
    firstStepDelays: (prefix) =>
      withMaria(url, async (c) => {
        const rows = await c.query<Array<{ d: string }>>(
          `SELECT TIMESTAMPDIFF(MICROSECOND, r.created_at, min(s.started_at)) / 1000 AS d
             FROM durable_runs r JOIN durable_steps s ON s.run_id = r.id WHERE r.id LIKE ? GROUP BY r.id, r.created_at`,
          [`${prefix}%`],
        );
        return rows.map((r) => Number(r.d));
      }),
    until: (ws, n, log) =>
      guardStall(
        'nestjs-durable on MariaDB',
        ws.done.until(n, log),
        () => ws.done.n,
        () => mariaStatusSummary(url),
      ),
    idle: (cfg, seconds, log) => mariadbIdle(url, cfg, seconds, log),
  };
}

// ---- the idle cost ----------------------------------------------------------------------------

/** An idle worker engine, given a moment after its start (its boot statements) before the window opens. */
async function idleWorker(cfg: HostConfig): Promise<WorkerSet> {
  const ws = await startWorkers(cfg, 1);
  await sleep(2_000);
  return ws;
}

const total = (c: StatementCounts) => Object.values(c).reduce((a, b) => a + b, 0);

async function postgresIdle(url: string, cfg: HostConfig, seconds: number, log: (m: string) => void): Promise<IdleFigures> {
  const dbName = databaseName(url);
  // pg_stat_statements when the server loads it (the extension is created in the fresh database); else the database's commits.
  const pss = await withClient(url, async (c) => {
    const { rows } = await c.query<{ loaded: boolean }>(
      `SELECT current_setting('shared_preload_libraries') ~ 'pg_stat_statements' AS loaded`,
    );
    if (!rows[0].loaded) return false;
    await c.query('CREATE EXTENSION IF NOT EXISTS pg_stat_statements');
    return true;
  });
  const calls = () =>
    withClient(url, async (c) => {
      const { rows } = await c.query<{ n: string }>(
        `SELECT coalesce(sum(calls), 0) AS n FROM pg_stat_statements WHERE dbid = (SELECT oid FROM pg_database WHERE datname = $1)`,
        [dbName],
      );
      return Number(rows[0].n);
    });
  const ws = await idleWorker(cfg);
  const host = ws.host!;
  log(`  idle worker for ${seconds} s (${pss ? 'pg_stat_statements' : 'pg_stat_database.xact_commit'})`);
  const read = async () => (pss ? await calls() : (await readDbStats(url)).xactCommit);
  const n0 = await read();
  const counts0 = { ...host.counts };
  const t0 = performance.now();
  await sleep(seconds * 1000);
  const counts = diffCounts(host.counts, counts0);
  // pg_stat_statements: the "before" read is recorded in the window (a statement is counted once it ran). xact_commit is read
  // from the maintenance database, so the reads never count.
  const n1 = await read();
  const s = (performance.now() - t0) / 1000;
  await ws.stop();
  return {
    seconds: s,
    statementsPerSec: (n1 - n0 - (pss ? 1 : 0)) / s,
    method: pss
      ? `pg_stat_statements: sum(calls) of database ${dbName} before/after, minus the probe's own read`
      : `pg_stat_database.xact_commit of database ${dbName} before/after, read from the maintenance database ` +
        '(pg_stat_statements is not loaded by this server); one commit per autocommit statement; backends flush their counters ' +
        'at most once a second, so the window is exact to about one statement per connection',
    engineStatementsPerSec: total(counts) / s,
    engineStatements: counts,
  };
}

async function mariadbIdle(url: string, cfg: HostConfig, seconds: number, log: (m: string) => void): Promise<IdleFigures> {
  const dbName = databaseName(url);
  // The engine talks to the server through a counting relay: its own statements, whoever else uses the server.
  const proxy = await countingProxy(url);
  const ws = await idleWorker({ ...cfg, url: proxy.url });
  log(`  idle worker for ${seconds} s (SHOW GLOBAL STATUS LIKE 'Questions', and a counting relay)`);
  // The probe's connection is open (its session settings sent) before the first reading.
  const c = await mariaConnect(url);
  const others = new Set<string>();
  let probes = 0;
  let q0 = 0;
  let s = 0;
  try {
    q0 = await questions(c);
    const p0 = proxy.snapshot();
    const t0 = performance.now();
    for (let i = 0; i < seconds; i++) {
      await sleep(1_000);
      for (const o of await otherConnections(c, dbName)) others.add(o);
      probes++;
    }
    const p1 = proxy.snapshot();
    const q1 = await questions(c);
    probes++; // the reading counts itself
    s = (performance.now() - t0) / 1000;
    await ws.stop();
    const engine = diffCommands(p1, p0);
    return {
      seconds: s,
      statementsPerSec: (q1 - q0 - probes) / s,
      method:
        `SHOW GLOBAL STATUS LIKE 'Questions' before/after (server-wide), minus the probe's own ${probes} statements ` +
        '(a reading counts itself; one PROCESSLIST look a second for other clients)',
      engineStatementsPerSec: engine.statements / s,
      engineStatements: engine.bySql,
      engineCommands: engine.byCommand,
      otherConnectionsSeen: [...others],
    };
  } finally {
    await c.end().catch(() => {});
    await proxy.close();
  }
}
