/**
 * What a big table of finished runs could slow down, measured through the library's own code:
 * the claim (claim-probe.ts), the admin API's queries (AdminService, as the HTTP API calls it), the
 * metrics gauges' statement, and retention (the sweeper's statement, batches of its default size).
 */
import type pg from 'pg';
import { AdminService } from '../../../libs/durable/src/admin/admin-service.js';
import { parseListQuery } from '../../../libs/durable/src/admin/params.js';
import { sweepRetention } from '../../../libs/durable/src/store/maintenance.js';
import { queueFigures } from '../../../libs/durable/src/store/queue-figures.js';
import { percentile } from '../stats.js';
import { claimParams, claimRound, type ClaimRound } from '../peers/claim-probe.js';
import type { OursHost } from '../peers/ours-lib.js';
import type { HostConfig } from '../peers/ours-lib.js';

const median = (xs: number[]) =>
  percentile(
    [...xs].sort((a, b) => a - b),
    50,
  );

/** ms of `fn`, `reps` times after one untimed call (a cold first call says more about the page cache than the query). */
async function timeIt(fn: () => Promise<unknown>, reps: number): Promise<{ p50: number; max: number; first: number }> {
  let s = performance.now();
  await fn();
  const first = performance.now() - s;
  const xs: number[] = [];
  for (let i = 0; i < reps; i++) {
    s = performance.now();
    await fn();
    xs.push(performance.now() - s);
  }
  return { p50: median(xs), max: Math.max(...xs), first };
}

export interface QueryTiming {
  name: string;
  p50Ms: number;
  maxMs: number;
  firstMs: number;
  /** Rows the answer held (list items, or a count the answer carries). */
  answer: string;
}

/** The admin API's reads an operator makes on a big table, each as the API runs it (list = page + per-status counts). */
export async function adminQueries(host: OursHost, reps: number, log: (m: string) => void): Promise<QueryTiming[]> {
  const admin = new AdminService(() => host.engine);
  const day = 86_400_000;
  const dayAgo = new Date(Date.now() - day);
  const list = (q: Record<string, string>) => () => admin.listRuns(parseListQuery(q));
  const someRun = (await admin.listRuns(parseListQuery({ limit: '1', createdTo: dayAgo.toISOString() }))).items[0]?.id ?? 'none';
  const deepPage = async () => {
    let cursor: string | undefined;
    for (let i = 0; i < 20; i++)
      cursor = (await admin.listRuns(parseListQuery({ limit: '50', ...(cursor ? { cursor } : {}) }))).nextCursor ?? undefined;
    return cursor;
  };
  const cases: Array<[string, () => Promise<unknown>]> = [
    ['list: newest 50, no filter (+ counts)', list({})],
    ['list: status FAILED', list({ status: 'FAILED' })],
    ['list: status CANCELLED, oldest first', list({ status: 'CANCELLED', order: 'asc' })],
    ['list: one workflow of 20', list({ workflow: 'workflow-7' })],
    ['list: workflow + status FAILED (none match)', list({ workflow: 'workflow-7', status: 'FAILED' })],
    ['list: queue "emails" (10 %)', list({ queue: 'emails' })],
    [
      'list: created in a 1 h window a day ago',
      list({ createdFrom: new Date(dayAgo.getTime() - 3_600_000).toISOString(), createdTo: dayAgo.toISOString() }),
    ],
    [
      'list: finished in a 1 h window a day ago',
      list({ finishedFrom: new Date(dayAgo.getTime() - 3_600_000).toISOString(), finishedTo: dayAgo.toISOString() }),
    ],
    ['list: id prefix "abc"', list({ idPrefix: 'abc' })],
    ['list: tag "vip" (2 %)', list({ tag: 'vip' })],
    ['list: input {"customer":"customer-42"} (0.1 %)', list({ input: '{"customer":"customer-42"}' })],
    ['list: sorted by updated', list({ sort: 'updated' })],
    ['list: 20 pages deep (20 calls)', deepPage],
    ['run detail (steps, history)', () => admin.getRun(someRun)],
    ['stats, last 60 min', () => admin.stats(60)],
    ['stats, last 24 h window', () => admin.stats(1440)],
    ['charts 1h', () => admin.charts('1h')],
    ['charts 24h', () => admin.charts('24h')],
    ['charts 7d', () => admin.charts('7d')],
    ['versions in flight', () => admin.versions()],
    ['metrics gauges (queue figures)', () => queueFigures(host.engine.storeForTools)],
  ];
  const out: QueryTiming[] = [];
  for (const [name, fn] of cases) {
    const t = await timeIt(fn, reps);
    const r = (await fn()) as { items?: unknown[]; total?: number } | undefined;
    const answer = r && typeof r === 'object' && Array.isArray(r.items) ? `${r.items.length} items, total ${r.total}` : '';
    out.push({ name, p50Ms: t.p50, maxMs: t.max, firstMs: t.first, answer });
    log(
      `  ${t.p50.toFixed(1).padStart(8)} ms p50 (max ${t.max.toFixed(1)}, first ${t.first.toFixed(1)})  ${name}${answer ? `: ${answer}` : ''}`,
    );
  }
  return out;
}

export interface ClaimFigures {
  p50Ms: number;
  p99Ms: number;
  runsPerSec: number;
  emptyP50Ms: number;
  roundsP50Ms: number[];
}

/** The claim statement, `rounds` rounds of `claimRuns` due runs; the median of each figure. */
export async function claimFigures(c: pg.Client, cfg: HostConfig, claimRuns: number, rounds: number): Promise<ClaimFigures> {
  const rs: ClaimRound[] = [];
  for (let i = 0; i < rounds; i++) rs.push(await claimRound(c, cfg, claimRuns, claimParams(cfg.concurrency, cfg.history)));
  return {
    p50Ms: median(rs.map((r) => r.p50)),
    p99Ms: median(rs.map((r) => r.p99)),
    runsPerSec: median(rs.map((r) => r.runsPerSec)),
    emptyP50Ms: median(rs.map((r) => r.emptyP50)),
    roundsP50Ms: rs.map((r) => Number(r.p50.toFixed(3))),
  };
}

export interface RetentionFigures {
  runs: number;
  batch: number;
  seconds: number;
  runsPerSec: number;
  batchP50Ms: number;
  batchMaxMs: number;
}

/**
 * Retention: the sweeper's statement (store/maintenance.ts) with its default batch of 500, its
 * threshold set so that the oldest `runs` runs are due (the same statement and plan as at 14 days,
 * whatever the table's time span); each run deleted with its steps (cascade) and history.
 */
export async function retention(c: pg.Client, host: OursHost, runs: number, batch: number): Promise<RetentionFigures> {
  const {
    rows: [row],
  } = await c.query(
    `SELECT extract(epoch FROM now() - finished_at) * 1000 AS age FROM durable_runs WHERE finished_at IS NOT NULL ORDER BY finished_at OFFSET $1 LIMIT 1`,
    [runs],
  );
  const olderThanMs = Number(row.age);
  const times: number[] = [];
  let deleted = 0;
  const t0 = performance.now();
  for (;;) {
    const s = performance.now();
    const n = await sweepRetention(host.engine.storeForTools, olderThanMs, batch);
    times.push(performance.now() - s);
    deleted += n;
    if (n < batch) break;
  }
  const seconds = (performance.now() - t0) / 1000;
  return { runs: deleted, batch, seconds, runsPerSec: deleted / seconds, batchP50Ms: median(times), batchMaxMs: Math.max(...times) };
}
