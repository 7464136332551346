/**
 * `npm run bench -- databases [--workflows 2000] [--concurrency 50] [--rounds 2] [--latency-runs 100] …`:
 * our engine alone (no DBOS) on PostgreSQL and on MariaDB in one run, alternating round by round (ABBA: a
 * round's second database goes first in the next), with the same shapes: 3 steps without payload, and 10
 * steps with a 1 KB input. Per database, shape and round, on a fresh database (Postgres: prisma/migrations,
 * as ours.ts makes it; MariaDB: libs/durable/prisma/schema.mysql.sql):
 *
 *   drain         warm-up, then N runs enqueued with startMany by a client engine (worker: false), then one
 *                 worker engine at --concurrency drains them: N ÷ (first started_at → last finished_at).
 *   one by one    --callers callers in the worker engine's process each start a run and await the start
 *                 (ours.ts' end-to-end phase): N ÷ (first created_at → last finished_at). A start that finds
 *                 a free slot takes the in-process path on both databases.
 *   start → claim a client engine (worker: false) starts --latency-runs runs one at a time, 20–50 ms apart; a
 *                 worker engine claims them, at the default pollIntervalMs and at 100 ms: started_at −
 *                 created_at (database clock; started_at is the first claim, where the first step begins).
 *                 Postgres wakes the worker by LISTEN/NOTIFY, MariaDB has none: the worker's poll finds them.
 *   idle cost     one idle worker engine (default poll) for --idle-seconds: statements per second at the
 *                 server. MariaDB: SHOW GLOBAL STATUS 'Questions' before/after minus this probe's own
 *                 statements (server-wide: other clients are listed). Postgres: pg_stat_statements calls of
 *                 the database when the server loads it, else pg_stat_database.xact_commit of the database
 *                 (read from the maintenance database; one commit per autocommit statement), with the
 *                 engine's own count at its pool beside it.
 *
 * The engines are the bench's OursHost (peers/ours-lib.ts), the workload and enqueueing those of ours.ts.
 * Prints one table per shape (a row per database and MariaDB ÷ PostgreSQL) and writes
 * results/databases-latest.json.
 */
import { cpus, loadavg, totalmem } from 'node:os';
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { benchDbUrl, databaseName, serverVersion, withClient } from './db.js';
import { withStatistics } from './autoanalyze.js';
import { oneByOne } from './callers.js';
import { peerPoolSize } from './figures.js';
import { OursHost, WORKFLOW, type HostConfig } from './peers/ours-lib.js';
import type { Timing } from './peers/ours-measure.js';
import { enqueueBulk } from './peers/ours.js';
import { startWorkers, type WorkerSet } from './peers/ours-workers.js';
import { mariaServerInfo } from './mariadb.js';
import {
  DBS,
  LABEL,
  pcts,
  pollLabel,
  POLLS,
  round2,
  SHAPES,
  sleep,
  type Db,
  type LatencyFigures,
  type Measurement,
  type Opts,
  type Shape,
} from './databases-model.js';
import { mariadbSide, postgresSide, type Side } from './databases-sides.js';
import { COLUMNS, renderShape, summarize, type Summary } from './databases-report.js';
import { PG_URL_OPTION } from './cli-args.js';

// ---- one database, one shape, one round -------------------------------------------------------

async function measure(side: Side, shape: Shape, o: Opts, round: number, log: (m: string) => void): Promise<Measurement> {
  const t0 = performance.now();
  const N = o.workflows;
  const payload = 'x'.repeat(shape.payloadBytes);
  const cfg = (worker: boolean, pollIntervalMs?: number): HostConfig => ({
    url: side.url,
    steps: shape.steps,
    concurrency: o.concurrency,
    dbWrite: false,
    worker,
    history: true,
    pollIntervalMs,
    // As ours.ts sizes a worker's pool; a client engine only starts runs.
    poolSize: worker ? peerPoolSize(o.concurrency) : 10,
    logWarnings: true,
  });
  const warnings: string[] = [];
  const notes: string[] = [];
  const loadAverage = round2(loadavg());
  const stopHost = async (h: OursHost) => {
    await h.stop();
    warnings.push(...h.warnings);
  };
  const stopWorkers = async (ws: WorkerSet) => {
    await ws.stop();
    if (ws.host) warnings.push(...ws.host.warnings);
  };
  const startClient = async () => {
    const h = new OursHost(cfg(false));
    await h.start();
    return h;
  };
  const check = (name: string, ts: Timing[], n: number) => {
    const bad = ts.filter((t) => t.status !== 'SUCCEEDED').length;
    if (ts.length !== n || bad) notes.push(`WARNING: ${name}: ${ts.length} rows of ${n}, ${bad} not SUCCEEDED`);
  };

  log(`recreating ${databaseName(side.url)}`);
  await side.recreate();

  const phases = async () => {
    // ---- drain ----
    let ws = await startWorkers(cfg(true), 1);
    const warm = Math.min(100, Math.max(20, o.concurrency * 4));
    log(`warm-up: ${warm} runs`);
    await enqueueBulk(ws.host!, 'warm-', warm, payload);
    await side.until(ws, warm);
    await stopWorkers(ws);
    const client = await startClient();
    log(`drain: startMany ${N} with no worker, then one worker at concurrency ${o.concurrency}`);
    await enqueueBulk(client, 'drain-', N, payload);
    await stopHost(client);
    await sleep(300);
    const w0 = performance.now();
    ws = await startWorkers(cfg(true), 1);
    await side.until(ws, N, log);
    const workerStartToDoneS = (performance.now() - w0) / 1000;
    await stopWorkers(ws);
    const dT = await side.timings('drain-');
    check('drain', dT, N);
    const drainS = (Math.max(...dT.map((t) => t.finished)) - Math.min(...dT.map((t) => t.started))) / 1000;

    // ---- one by one, in the worker's process ----
    await sleep(300);
    ws = await startWorkers(cfg(true), 1);
    log(`one by one: ${N} runs started by ${o.callers} callers in the worker's process`);
    const host = ws.host!;
    await oneByOne(N, o.callers, (i) => host.engine.startRun(WORKFLOW, payload, { id: `obo-${i}` }));
    await side.until(ws, N, log);
    await stopWorkers(ws);
    const oT = await side.timings('obo-');
    check('one by one', oT, N);
    const oboS = (Math.max(...oT.map((t) => t.finished)) - Math.min(...oT.map((t) => t.created))) / 1000;
    const fastPathShare = oT.filter((t) => t.started === t.created).length / oT.length;

    // ---- start → claim across engines ----
    const latency: LatencyFigures[] = [];
    for (const poll of POLLS) {
      await sleep(300);
      ws = await startWorkers(cfg(true, poll), 1);
      const starter = await startClient();
      await sleep(1_000); // the worker's LISTEN session (Postgres) and first poll
      const prefix = `lat${poll ?? 'default'}-`;
      log(`start → claim: ${o.latencyRuns} runs from a client engine, one at a time, worker pollIntervalMs ${pollLabel(poll)}`);
      for (let i = 0; i < o.latencyRuns; i++) {
        await starter.engine.startRun(WORKFLOW, payload, { id: `${prefix}${i}` });
        await sleep(20 + Math.random() * 30);
      }
      await side.until(ws, o.latencyRuns, log);
      await stopHost(starter);
      await stopWorkers(ws);
      const lT = await side.timings(prefix);
      check(`start → claim, poll ${pollLabel(poll)}`, lT, o.latencyRuns);
      const samples = lT.map((t) => t.started - t.created);
      latency.push({
        pollIntervalMs: pollLabel(poll),
        runs: lT.length,
        startToClaimMs: pcts(samples),
        startToFirstStepRowMs: pcts(await side.firstStepDelays(prefix)),
        samples,
      });
    }
    return {
      drain: { workflowsPerSec: N / drainS, dbWallS: drainS, workerStartToDoneS },
      oneByOne: { workflowsPerSec: N / oboS, dbWallS: oboS, fastPathShare },
      latency,
    };
  };
  let figures: Awaited<ReturnType<typeof phases>>;
  if (side.db === 'postgres') {
    // This server may run without autovacuum: the bench's ANALYZE rule, as main.ts applies it (not during the idle window).
    const { result, note } = await withStatistics(side.url, phases);
    figures = result;
    if (note) notes.push(note);
  } else figures = await phases();

  await sleep(300);
  const idle = await side.idle(cfg(true), o.idleSeconds, log);
  if (idle.otherConnectionsSeen?.length)
    notes.push(
      `idle: other clients were connected to the MariaDB server during the window (${idle.otherConnectionsSeen.join(', ')}): Questions counts theirs too`,
    );
  await side.drop();
  return { db: side.db, round, loadAverage, ...figures, idle, durationS: (performance.now() - t0) / 1000, warnings, notes };
}

// ---- the command ------------------------------------------------------------------------------

export async function runDatabasesBench(argv: string[]): Promise<void> {
  const { values: a } = parseArgs({
    args: argv,
    options: {
      workflows: { type: 'string', default: '2000' },
      concurrency: { type: 'string', default: '50' },
      callers: { type: 'string', default: '10' },
      rounds: { type: 'string', default: '2' },
      'latency-runs': { type: 'string', default: '100' },
      'idle-seconds': { type: 'string', default: '10' },
      'pg-url': PG_URL_OPTION,
      'mariadb-url': { type: 'string', default: process.env.BENCH_MARIADB_URL ?? 'mysql://root@127.0.0.1:3306' },
      out: { type: 'string', default: fileURLToPath(new URL('../results/databases-latest.json', import.meta.url)) },
      help: { type: 'boolean', short: 'h', default: false },
    },
  });
  if (a.help) {
    process.stdout.write(
      'usage: npm run bench -- databases [--workflows 2000] [--concurrency 50] [--callers 10] [--rounds 2] [--latency-runs 100]\n' +
        '       [--idle-seconds 10] [--pg-url postgres://postgres@127.0.0.1:5432] [--mariadb-url mysql://root@127.0.0.1:3306]\n' +
        '       [--out results/databases-latest.json] [--db-prefix bench]   (database <prefix>_dbs on both servers, dropped at the end)\n',
    );
    return;
  }
  const int = (name: string, min: number) => {
    const n = Number(a[name as keyof typeof a]);
    if (!Number.isInteger(n) || n < min) throw new Error(`--${name} must be an integer ≥ ${min}, got ${a[name as keyof typeof a]}`);
    return n;
  };
  const o: Opts = {
    workflows: int('workflows', 1),
    concurrency: int('concurrency', 1),
    callers: int('callers', 1),
    rounds: int('rounds', 1),
    latencyRuns: int('latency-runs', 1),
    idleSeconds: int('idle-seconds', 1),
  };
  const log = (m: string) => process.stderr.write(`${m}\n`);
  const sides: Record<Db, Side> = {
    postgres: postgresSide(benchDbUrl(a['pg-url']!, 'dbs')),
    mariadb: mariadbSide(benchDbUrl(a['mariadb-url']!, 'dbs')),
  };
  const meta: Record<string, unknown> = {
    date: new Date().toISOString(),
    command: `npm run bench -- databases ${argv.join(' ')}`.trim(),
    loadAverage: round2(loadavg()),
    workload: { ...o, shapes: SHAPES, polls: POLLS.map(pollLabel) },
    node: process.version,
    cpus: cpus().length,
    cpuModel: cpus()[0]?.model,
    memGiB: Math.round(totalmem() / 2 ** 30),
    postgres: await serverVersion(sides.postgres.url),
    postgresSettings: await withClient(sides.postgres.url.replace(/\/[^/]*$/, '/postgres'), async (c) => {
      const { rows } = await c.query<{ name: string; setting: string }>(
        `SELECT name, setting FROM pg_settings WHERE name IN ('fsync', 'synchronous_commit', 'autovacuum', 'shared_buffers', 'max_connections', 'shared_preload_libraries')`,
      );
      return Object.fromEntries(rows.map((r) => [r.name, r.setting]));
    }),
    mariadb: await mariaServerInfo(sides.mariadb.url),
    engine: `libs/durable/src through peers/ours-lib.ts (OursHost): history on, leaseMs 30000, pool ${peerPoolSize(o.concurrency)} per worker engine, 10 per client engine`,
  };
  const t0 = performance.now();
  process.stdout.write(
    `nestjs-durable on PostgreSQL ${meta.postgres} and MariaDB ${(meta.mariadb as Record<string, string>).version}: ` +
      `${o.workflows} workflows per phase, concurrency ${o.concurrency}, ${o.rounds} round(s) alternating; ` +
      `${meta.cpus} x ${meta.cpuModel}, Node ${meta.node}; load average at start ${(meta.loadAverage as number[]).join(' ')}\n`,
  );
  const shapes: Array<{ shape: Shape; summary: Record<Db, Summary>; ratio: Record<string, number>; rounds: Measurement[] }> = [];
  for (const shape of SHAPES) {
    const rounds: Measurement[] = [];
    for (let r = 0; r < o.rounds; r++) {
      // ABBA: neither database always goes first (a warm cache, the other's leftovers).
      for (const db of r % 2 === 0 ? DBS : [...DBS].reverse()) {
        const tag = `[${LABEL[db]} ${shape.steps}×${shape.payloadBytes} B r${r + 1}]`;
        log(
          `${tag} load average ${loadavg()
            .map((x) => x.toFixed(2))
            .join(' ')}`,
        );
        const m = await measure(sides[db], shape, o, r + 1, (msg) => log(`${tag} ${msg}`));
        log(
          `${tag} drain ${m.drain.workflowsPerSec.toFixed(0)} wf/s, one by one ${m.oneByOne.workflowsPerSec.toFixed(0)} wf/s, ` +
            `claim p50 ${m.latency.map((l) => `${l.startToClaimMs.p50.toFixed(1)} ms (poll ${l.pollIntervalMs})`).join(', ')}, ` +
            `idle ${m.idle.statementsPerSec.toFixed(1)} statements/s, ${m.warnings.length} engine warning(s), ${m.durationS.toFixed(0)} s`,
        );
        rounds.push(m);
      }
    }
    const summary = {
      postgres: summarize(rounds.filter((m) => m.db === 'postgres')),
      mariadb: summarize(rounds.filter((m) => m.db === 'mariadb')),
    };
    const ratio = Object.fromEntries(COLUMNS.map((c) => [c.head, c.get(summary.mariadb) / c.get(summary.postgres)]));
    shapes.push({ shape, summary, ratio, rounds });
    const table = renderShape(shape, o, summary);
    const notes = [
      `  one by one: ${DBS.map((db) => `${LABEL[db]} ${(summary[db].fastPathShare * 100).toFixed(0)} %`).join(', ')} of the runs took the in-process path (started_at = created_at)`,
      ...DBS.map((db) => `  idle, ${LABEL[db]}: ${rounds.find((m) => m.db === db)!.idle.method}`),
      ...DBS.map((db) => {
        const m = rounds.find((x) => x.db === db)!;
        return (
          `  idle, ${LABEL[db]}, the engine's own statements (${db === 'postgres' ? 'counted at its pool' : 'counted by a relay in front of the server'}), ` +
          `round ${m.round}, ${m.idle.seconds.toFixed(1)} s: ${Object.entries(m.idle.engineStatements)
            .map(([k, v]) => `${v} × ${k}`)
            .join('; ')}` +
          (m.idle.engineCommands
            ? ` (protocol commands: ${Object.entries(m.idle.engineCommands)
                .map(([k, v]) => `${k} ${v}`)
                .join(', ')})`
            : '')
        );
      }),
      ...rounds.flatMap((m) => [...m.notes, ...m.warnings.map((w) => `engine ${w}`)].map((n) => `  ${LABEL[m.db]} r${m.round}: ${n}`)),
    ];
    process.stdout.write([...table, '', ...notes].map((l) => `${l}\n`).join('') + '\n');
  }
  meta.durationS = Math.round((performance.now() - t0) / 1000);
  meta.loadAverageAtEnd = round2(loadavg());
  process.stdout.write(`load average at end ${(meta.loadAverageAtEnd as number[]).join(' ')}; ${meta.durationS} s\n`);
  mkdirSync(dirname(a.out!), { recursive: true });
  writeFileSync(a.out!, JSON.stringify({ meta, shapes }, null, 2) + '\n');
  log(`\nwrote ${a.out}`);
}
