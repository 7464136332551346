/** Prints the side-by-side table and writes results JSON. */
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import type { LimitFigures, PeerFigures } from './figures.js';

export interface Report {
  meta: Record<string, unknown>;
  limit?: LimitFigures;
  ours?: PeerFigures;
  oursError?: string;
  dbos?: PeerFigures;
  dbosError?: string;
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

export function rows(r: Report): Row[] {
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
    row('% of commit limit', (p) => percentOfLimit(p, r.limit), 1),
  ];
}

const fmt = (v: number | undefined, digits: number) =>
  v === undefined || !Number.isFinite(v) ? 'n/a' : v.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits });

export function renderTable(r: Report): string {
  const header = ['figure', 'ours', 'DBOS', 'ours/DBOS'];
  const body = rows(r).map((x) => [
    x.figure,
    fmt(x.ours, x.digits),
    fmt(x.dbos, x.digits),
    x.ours !== undefined && x.dbos ? `${(x.ours / x.dbos).toFixed(2)}x` : 'n/a',
  ]);
  const all = [header, ...body];
  const widths = header.map((_, i) => Math.max(...all.map((line) => line[i].length)));
  const line = (cells: string[]) =>
    cells.map((c, i) => (i === 0 ? c.padEnd(widths[i]) : c.padStart(widths[i]))).join(' | ');
  const sep = widths.map((w) => '-'.repeat(w)).join('-|-');
  const out = [line(header), sep, ...body.map(line)];
  if (r.limit) {
    out.push('');
    out.push(`Postgres limit (single-row INSERT, autocommit, ${r.limit.clients} clients, ${r.limit.seconds} s):`);
    out.push(`  Node (pg driver): ${fmt(r.limit.nodeInsertCommitsPerSec, 0)} commits/s`);
    out.push(`  pgbench:          ${fmt(r.limit.pgbenchInsertCommitsPerSec, 0)} commits/s`);
    for (const n of r.limit.notes) out.push(`  note: ${n}`);
  }
  if (r.oursError) out.push('', `ours: ${r.oursError}`);
  if (r.dbosError) out.push('', `DBOS: ${r.dbosError}`);
  for (const [name, p] of [['ours', r.ours], ['DBOS', r.dbos]] as const) {
    if (!p) continue;
    out.push('', `${name} notes:`);
    for (const n of p.notes) out.push(`  - ${n}`);
  }
  return out.join('\n');
}

export function writeJson(path: string, r: Report): void {
  mkdirSync(dirname(path), { recursive: true });
  writeFileSync(path, JSON.stringify({ ...r, table: rows(r) }, null, 2) + '\n');
}
