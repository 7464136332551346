/**
 * npm run bench -- instances [--processes 1,2,4,8] [--workflows 4000] [--steps 3] [--concurrency 10] [--pool 10]
 * Many instances against one Postgres: for each count P, a fresh database (<prefix>_instances),
 * `workflows` runs enqueued in bulk with no worker running, then P worker processes (forked, as in
 * the main run's --processes) drain them. Per P: workflows/s (first started_at → last finished_at,
 * database clock); connections of the database (pg_stat_activity, sampled every 50 ms: the most at
 * once); claim contention: claims sent, the share that found nothing to claim (a worker asked, the
 * queue had nothing left that SKIP LOCKED let it take), their mean round trip, and the share of
 * samples with a backend of the database waiting on a lock (wait_event_type 'Lock', with the lock
 * types seen). CPU ms/workflow of the workers and of Postgres. Dropped at the end.
 */
import { loadavg } from 'node:os';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { benchDbUrl, databaseName, dropDatabase, recreateDatabase } from './db.js';
import { pgCpuDelta, snapshotPgCpu } from './pg-cpu.js';
import { createSchema, OursHost, type HostConfig } from './peers/ours-lib.js';
import { enqueueBulk, readTimings, untilDone } from './peers/ours.js';
import { startChildWorkers } from './peers/ours-workers.js';
import { PG_URL_OPTION, positiveInt } from './cli-args.js';

interface InstancesRow {
  processes: number;
  workflowsPerSec: number;
  maxConnections: number;
  claims: number;
  emptyClaimShare: number;
  claimMeanMs: number;
  lockWaitSampleShare: number;
  lockTypes: Record<string, number>;
  cpuMsPerWorkflow: { workers: number; postgres: number };
  loadAverage: number;
}

/** Samples pg_stat_activity of one database every `ms` until stopped. */
function sampleActivity(url: string, db: string, ms = 50) {
  const c = new pg.Client({ connectionString: url.replace(/\/[^/]*$/, '/postgres') });
  let stop = false;
  const res = { samples: 0, maxConnections: 0, lockSamples: 0, lockTypes: {} as Record<string, number> };
  const done = (async () => {
    await c.connect();
    while (!stop) {
      const { rows } = await c.query<{ n: number; waiting: number; types: string[] | null }>(
        `SELECT count(*)::int AS n, count(*) FILTER (WHERE wait_event_type = 'Lock')::int AS waiting,
                array_agg(wait_event) FILTER (WHERE wait_event_type = 'Lock') AS types
         FROM pg_stat_activity WHERE datname = $1`,
        [db],
      );
      res.samples++;
      res.maxConnections = Math.max(res.maxConnections, rows[0].n);
      if (rows[0].waiting) res.lockSamples++;
      for (const t of rows[0].types ?? []) res.lockTypes[t] = (res.lockTypes[t] ?? 0) + 1;
      await new Promise((r) => setTimeout(r, ms));
    }
    await c.end();
  })();
  return {
    stop: async () => {
      stop = true;
      await done;
      return res;
    },
  };
}

export async function runInstancesBench(argv: string[]): Promise<void> {
  const { values: a } = parseArgs({
    args: argv,
    options: {
      processes: { type: 'string', default: '1,2,4,8' },
      workflows: { type: 'string', default: '4000' },
      steps: { type: 'string', default: '3' },
      concurrency: { type: 'string', default: '10' },
      pool: { type: 'string', default: '10' },
      'pg-url': PG_URL_OPTION,
    },
  });
  const counts = a.processes!.split(',').map((x) => positiveInt('processes', x.trim()));
  const N = positiveInt('workflows', a.workflows);
  const log = (m: string) => process.stderr.write(`[instances] ${m}\n`);
  const url = benchDbUrl(a['pg-url']!, 'instances');
  const db = databaseName(url);
  const cfg: HostConfig = {
    url,
    steps: positiveInt('steps', a.steps),
    concurrency: positiveInt('concurrency', a.concurrency),
    dbWrite: false,
    worker: true,
    history: true,
    poolSize: positiveInt('pool', a.pool),
  };
  const rows: InstancesRow[] = [];
  const load0 = loadavg()[0];
  try {
    for (const P of counts) {
      log(`${P} worker process(es) started on a fresh database, then ${N} runs enqueued in bulk for them to drain`);
      await recreateDatabase(url);
      await createSchema(url);
      // Every worker is up before the runs exist (on a loaded box the first process up would drain them alone).
      const ws = await startChildWorkers(cfg, P); // forked even for P = 1, so every count is measured alike
      const snap0 = await ws.snap();
      const pg0 = snapshotPgCpu();
      const sampler = sampleActivity(url, db);
      const client = new OursHost({ ...cfg, worker: false });
      await client.start();
      await enqueueBulk(client, 'inst-', N, '');
      await client.stop();
      await untilDone(ws, N, url, log);
      const snap1 = await ws.snap();
      const snap = { cpuMs: snap1.cpuMs - snap0.cpuMs, claims: snap1.claims };
      const pgc = pgCpuDelta(pg0, snapshotPgCpu(), db);
      const act = await sampler.stop();
      await ws.stop();
      const t = await readTimings(url, 'inst-');
      const wps = N / ((Math.max(...t.map((x) => x.finished)) - Math.min(...t.map((x) => x.started))) / 1000);
      const cl = snap.claims ?? { n: 0, empty: 0, ms: 0 };
      const row: InstancesRow = {
        processes: P,
        workflowsPerSec: wps,
        maxConnections: act.maxConnections,
        claims: cl.n,
        emptyClaimShare: cl.n ? cl.empty / cl.n : 0,
        claimMeanMs: cl.n ? cl.ms / cl.n : 0,
        lockWaitSampleShare: act.samples ? act.lockSamples / act.samples : 0,
        lockTypes: act.lockTypes,
        cpuMsPerWorkflow: { workers: snap.cpuMs / N, postgres: (pgc.dbMs + pgc.auxMs) / N },
        loadAverage: Number(loadavg()[0].toFixed(1)),
      };
      rows.push(row);
      log(
        `  ${wps.toFixed(0)} wf/s, ${act.maxConnections} connections at most, ${cl.n} claims (${(row.emptyClaimShare * 100).toFixed(0)} % empty)`,
      );
    }
  } finally {
    await dropDatabase(url);
  }
  const header = [
    'processes',
    'workflows/s',
    'vs 1',
    'connections (max)',
    'claims',
    'claims/wf',
    'empty claims',
    'claim mean ms',
    'samples with a lock wait',
    'lock waits seen',
    'CPU ms/wf workers + pg',
    'load',
  ];
  const body = rows.map((r) => [
    String(r.processes),
    r.workflowsPerSec.toFixed(0),
    `${(r.workflowsPerSec / rows[0].workflowsPerSec).toFixed(2)}x`,
    String(r.maxConnections),
    String(r.claims),
    (r.claims / N).toFixed(2),
    `${(r.emptyClaimShare * 100).toFixed(0)} %`,
    r.claimMeanMs.toFixed(2),
    `${(r.lockWaitSampleShare * 100).toFixed(0)} %`,
    Object.entries(r.lockTypes)
      .map(([k, v]) => `${k} ${v}`)
      .join(', ') || '-',
    `${r.cpuMsPerWorkflow.workers.toFixed(2)} + ${r.cpuMsPerWorkflow.postgres.toFixed(2)}`,
    r.loadAverage.toFixed(1),
  ]);
  const all = [header, ...body];
  const w = header.map((_, i) => Math.max(...all.map((l) => l[i].length)));
  const line = (l: string[]) => l.map((x, i) => x.padStart(w[i])).join(' | ');
  process.stdout.write(
    [
      `Instances: ${N} workflows × ${cfg.steps} steps drained by P worker processes (concurrency ${cfg.concurrency}, pool ${cfg.poolSize} each) on one Postgres; load average at start ${load0.toFixed(1)}`,
      line(header),
      w.map((x) => '-'.repeat(x)).join('-|-'),
      ...body.map(line),
    ].join('\n') + '\n',
  );
}
