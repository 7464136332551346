/** Prints the side-by-side table and writes results JSON. */
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import type { LimitFigures, PeerFigures } from './figures.js';
import type { OursDetail, PhaseCost } from './peers/ours.js';
import type { ScaleResult } from './peers/ours-scale.js';
import { renderJobs, type JobsReport } from './jobs/main.js';

/** Both peers at one worker concurrency. */
export interface LevelReport {
  concurrency: number;
  ours?: PeerFigures;
  oursDetail?: OursDetail;
  oursError?: string;
  dbos?: PeerFigures;
  dbosError?: string;
}

export interface Report {
  meta: Record<string, unknown>;
  limit?: LimitFigures;
  /** One entry per --concurrency level, in the order given. */
  levels: LevelReport[];
  scale?: ScaleResult;
  scaleError?: string;
  /** The job-queue peers (jobs/main.ts). */
  jobs?: JobsReport;
  jobsError?: string;
}

interface Row {
  figure: string;
  ours?: number;
  dbos?: number;
  /** Digits after the decimal point. */
  digits: number;
}

/** The commit rate used as "the limit": pgbench when available, else the Node measurement. */
export function limitRate(limit?: LimitFigures): number | undefined {
  return limit?.pgbenchInsertCommitsPerSec ?? limit?.nodeInsertCommitsPerSec;
}

/** Throughput as a percentage of (limit commit rate / commits per workflow). */
export function percentOfLimit(p: PeerFigures | undefined, limit?: LimitFigures): number | undefined {
  const rate = limitRate(limit);
  if (!p || !rate || !p.commitsPerWorkflow) return undefined;
  return (100 * p.workflowsPerSec) / (rate / p.commitsPerWorkflow);
}

export function rows(r: LevelReport, limit?: LimitFigures): Row[] {
  const o = r.ours;
  const d = r.dbos;
  const row = (figure: string, f: (p: PeerFigures) => number | undefined, digits = 1): Row => ({
    figure,
    ours: o ? f(o) : undefined,
    dbos: d ? f(d) : undefined,
    digits,
  });
  return [
    row('workflows/s (saturation)', (p) => p.workflowsPerSec, 0),
    row('steps/s (saturation)', (p) => p.stepsPerSec, 0),
    row('workflows/s (end to end)', (p) => p.endToEndWorkflowsPerSec, 0),
    // DBOS runs its callers in its worker process only: its one end-to-end figure is the reference for both rows.
    row(
      'workflows/s (end to end, starters in another process)',
      (p) => p.endToEndRemoteWorkflowsPerSec ?? (p === d ? p.endToEndWorkflowsPerSec : undefined),
      0,
    ),
    row('enqueue one by one /s', (p) => p.enqueueOneByOnePerSec, 0),
    row('enqueue bulk /s', (p) => p.enqueueBulkPerSec, 0),
    row('enqueue->start p50 ms', (p) => p.latency.enqueueToStart.p50),
    row('enqueue->start p90 ms', (p) => p.latency.enqueueToStart.p90),
    row('enqueue->start p99 ms', (p) => p.latency.enqueueToStart.p99),
    row('enqueue->done p50 ms', (p) => p.latency.enqueueToDone.p50),
    row('enqueue->done p90 ms', (p) => p.latency.enqueueToDone.p90),
    row('enqueue->done p99 ms', (p) => p.latency.enqueueToDone.p99),
    row('idle enqueue->start p50 ms', (p) => p.idle.enqueueToStart.p50),
    row('idle enqueue->start p99 ms', (p) => p.idle.enqueueToStart.p99),
    row('CPU ms/wf node', (p) => p.cpuMsPerWorkflow.node, 2),
    row('CPU ms/wf postgres', (p) => p.cpuMsPerWorkflow.postgres, 2),
    row('CPU ms/wf total', (p) => p.cpuMsPerWorkflow.total, 2),
    row('commits/wf', (p) => p.commitsPerWorkflow, 2),
    row('rows written/wf', (p) => p.rowsWrittenPerWorkflow, 2),
    row('% of commit limit', (p) => percentOfLimit(p, limit), 1),
  ];
}

const fmt = (v: number | undefined, digits: number) =>
  v === undefined || !Number.isFinite(v)
    ? 'n/a'
    : v.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits });

/** The side-by-side table of one concurrency level, with ours' cost breakdown and both peers' notes. */
function renderLevel(r: LevelReport, limit?: LimitFigures): string[] {
  const header = ['figure', 'ours', 'DBOS', 'ours/DBOS'];
  const body = rows(r, limit).map((x) => [
    x.figure,
    fmt(x.ours, x.digits),
    fmt(x.dbos, x.digits),
    x.ours !== undefined && x.dbos ? `${(x.ours / x.dbos).toFixed(2)}x` : 'n/a',
  ]);
  const all = [header, ...body];
  const widths = header.map((_, i) => Math.max(...all.map((line) => line[i].length)));
  const line = (cells: string[]) => cells.map((c, i) => (i === 0 ? c.padEnd(widths[i]) : c.padStart(widths[i]))).join(' | ');
  const sep = widths.map((w) => '-'.repeat(w)).join('-|-');
  const out = [
    `== concurrency ${r.concurrency} (workflows at once per worker process, both peers) ==`,
    '',
    line(header),
    sep,
    ...body.map(line),
  ];
  if (r.oursDetail) out.push('', ...renderOursDetail(r.oursDetail));
  if (r.oursError) out.push('', `ours: ${r.oursError}`);
  if (r.dbosError) out.push('', `DBOS: ${r.dbosError}`);
  for (const [name, p] of [
    ['ours', r.ours],
    ['DBOS', r.dbos],
  ] as const) {
    if (!p) continue;
    out.push('', `${name} notes:`);
    for (const n of p.notes) out.push(`  - ${n}`);
  }
  return out;
}

/**
 * Saturation throughput of each peer at the level where it is highest: what each can drain at
 * the concurrency that suits it (DBOS polls its queue and peaks early; ours keeps scaling).
 */
export function bestSaturation(r: Report): { ours?: { wps: number; concurrency: number }; dbos?: { wps: number; concurrency: number } } {
  const best = (pick: (l: LevelReport) => PeerFigures | undefined) =>
    r.levels
      .filter((l) => pick(l))
      .map((l) => ({ wps: pick(l)!.workflowsPerSec, concurrency: l.concurrency }))
      .sort((x, y) => y.wps - x.wps)[0];
  return { ours: best((l) => l.ours), dbos: best((l) => l.dbos) };
}

export function renderTable(r: Report): string {
  const out: string[] = [];
  for (const level of r.levels) out.push(...renderLevel(level, r.limit), '');
  if (r.levels.length > 1) {
    const { ours, dbos } = bestSaturation(r);
    if (ours && dbos) {
      out.push(
        `Saturation throughput, each peer at its best level: ours ${fmt(ours.wps, 0)} wf/s (concurrency ${ours.concurrency}), ` +
          `DBOS ${fmt(dbos.wps, 0)} wf/s (concurrency ${dbos.concurrency}): ${(ours.wps / dbos.wps).toFixed(2)}x`,
        '',
      );
    }
  }
  if (r.limit) {
    out.push(`Postgres limit (single-row INSERT, autocommit, ${r.limit.clients} clients, ${r.limit.seconds} s):`);
    out.push(`  Node (pg driver): ${fmt(r.limit.nodeInsertCommitsPerSec, 0)} commits/s`);
    out.push(`  pgbench:          ${fmt(r.limit.pgbenchInsertCommitsPerSec, 0)} commits/s`);
    for (const n of r.limit.notes) out.push(`  note: ${n}`);
  }
  if (r.jobs) out.push('', renderJobs(r.jobs));
  if (r.jobsError) out.push('', `jobs: ${r.jobsError}`);
  if (r.scale) out.push('', ...renderScale(r.scale));
  if (r.scaleError) out.push('', `scale: ${r.scaleError}`);
  return out.join('\n');
}

function renderPhase(name: string, p: PhaseCost, floor?: number): string[] {
  const out = [
    `  ${name}: ${p.statementsPerWorkflowTotal.toFixed(2)} engine statements/wf, ${p.commitsPerWorkflow.toFixed(2)} commits/wf` +
      (floor ? ` (floor ${floor} unshared: ${((100 * p.commitsPerWorkflow) / floor).toFixed(0)} % of it)` : '') +
      `, ` +
      `${p.rowsWrittenPerWorkflow.toFixed(2)} rows/wf, CPU ${p.cpuMsPerWorkflow.node.toFixed(2)} node + ${p.cpuMsPerWorkflow.postgres.toFixed(2)} postgres ms/wf`,
  ];
  for (const [k, v] of Object.entries(p.statementsPerWorkflow)) out.push(`    ${v.toFixed(3).padStart(7)}  ${k}`);
  if (p.userWritesPerWorkflow) out.push(`    ${p.userWritesPerWorkflow.toFixed(3).padStart(7)}  step body INSERT (--db-write, own pool)`);
  for (const prof of p.profiles ?? []) {
    out.push(`    CPU profile ${prof.file} (${prof.totalMs.toFixed(0)} ms sampled): by origin ${JSON.stringify(prof.byOrigin)}`);
    for (const t of prof.top.slice(0, 10)) out.push(`      ${t.ms.toFixed(0).padStart(6)} ms ${t.pct.toFixed(1).padStart(5)} %  ${t.fn}`);
  }
  return out;
}

export function renderOursDetail(d: OursDetail): string[] {
  const e2eShare = (p: PhaseCost) => `${((100 * p.workflowsPerSec) / d.drain.workflowsPerSec).toFixed(0)} % of the drain's wf/s`;
  return [
    `ours, cost per workflow by phase (statements counted at the engine's pool; commits and rows from pg_stat_database).`,
    `  Commit floor: ${d.commitFloor} per workflow (the start's commit + one per step checkpoint, the run's end going with the last),` +
      ` if a run shares no commit with another; group commit divides it among the runs in flight.`,
    ...renderPhase(
      `end to end (${(d.endToEnd.fastPathShare * 100).toFixed(0)} % in-process fast path; ${e2eShare(d.endToEnd)})`,
      d.endToEnd,
      d.commitFloor,
    ),
    ...(d.endToEndRemote
      ? renderPhase(`end to end, starters in another process (${e2eShare(d.endToEndRemote)})`, d.endToEndRemote, d.commitFloor)
      : []),
    ...renderPhase('saturation drain (claim path)', d.drain, d.commitFloor),
  ];
}

export function renderScale(s: ScaleResult): string[] {
  const header = ['case', 'rows', 'claim p50 ms', 'claim p99 ms', 'claimed runs/s', 'empty claim p50 ms', 'drain wf/s'];
  const body = s.cases.map((c) => [
    c.name,
    `${c.tableMiB.toFixed(0)} MiB`,
    c.claim.p50Ms.toFixed(2),
    c.claim.p99Ms.toFixed(2),
    c.claim.runsPerSec.toFixed(0),
    c.claim.emptyP50Ms.toFixed(2),
    c.drainWorkflowsPerSec.toFixed(0),
  ]);
  const all = [header, ...body];
  const widths = header.map((_, i) => Math.max(...all.map((l) => l[i].length)));
  const line = (cells: string[]) => cells.map((c, i) => (i === 0 ? c.padEnd(widths[i]) : c.padStart(widths[i]))).join(' | ');
  const out = [
    `Scale: the claim statement (limit ${s.claimLimit}, ${s.claimRuns} due runs, one connection) and the drain, by table contents:`,
    line(header),
    widths.map((w) => '-'.repeat(w)).join('-|-'),
    ...body.map(line),
  ];
  for (const [name, r] of Object.entries(s.ratios)) {
    out.push(
      `  ${name} / empty: claim p50 ${r.claimP50.toFixed(2)}x, claimed runs/s ${r.claimRunsPerSec.toFixed(2)}x, ` +
        `empty claim p50 ${r.emptyClaimP50.toFixed(2)}x, drain wf/s ${r.drainWorkflowsPerSec.toFixed(2)}x`,
    );
  }
  for (const c of s.cases) {
    const scan = /Index Scan using (\S+) on durable_runs\b[^\n]*\(actual time=[^)]*rows=(\d+)[^\n]*/.exec(c.explainEmptyClaim);
    const exec = /Execution Time: ([\d.]+) ms/.exec(c.explainEmptyClaim);
    const plan = /Planning Time: ([\d.]+) ms/.exec(c.explainEmptyClaim);
    const bufs = /Buffers: shared hit=(\d+)/.exec(c.explainEmptyClaim);
    const fullExec = /Execution Time: ([\d.]+) ms/.exec(c.explainClaim);
    out.push(
      `  EXPLAIN ANALYZE ${c.name}: full queue ${fullExec?.[1]} ms execution; empty queue: ${scan ? `${scan[1]}` : 'no index scan'}, ` +
        `${bufs?.[1] ?? '?'} buffers hit, planning ${plan?.[1]} ms, execution ${exec?.[1]} ms (full plans in the JSON)`,
    );
  }
  return out;
}

export function writeJson(path: string, r: Report): void {
  mkdirSync(dirname(path), { recursive: true });
  const levels = r.levels.map((l) => ({ ...l, table: rows(l, r.limit) }));
  writeFileSync(path, JSON.stringify({ ...r, levels, bestSaturation: bestSaturation(r) }, null, 2) + '\n');
}
