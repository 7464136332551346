/** The databases benchmark's summary per database and its table (a row per database and MariaDB ÷ PostgreSQL). */
import { DBS, LABEL, pcts, pollLabel, POLLS, type Db, type Measurement, type Opts, type Pcts, type Shape } from './databases-model.js';

// ---- summary and table ------------------------------------------------------------------------

export interface Summary {
  drainWorkflowsPerSec: number;
  oneByOneWorkflowsPerSec: number;
  /** By poll label: start → claim over every round's runs. */
  startToClaimMs: Record<string, Pcts>;
  idleStatementsPerSec: number;
  idleEngineStatementsPerSec: number;
  fastPathShare: number;
}

export function summarize(ms: Measurement[]): Summary {
  const startToClaimMs: Record<string, Pcts> = {};
  for (const poll of POLLS) {
    const label = pollLabel(poll);
    startToClaimMs[label] = pcts(ms.flatMap((m) => m.latency.find((l) => l.pollIntervalMs === label)?.samples ?? []));
  }
  const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
  return {
    drainWorkflowsPerSec: Math.max(...ms.map((m) => m.drain.workflowsPerSec)),
    oneByOneWorkflowsPerSec: Math.max(...ms.map((m) => m.oneByOne.workflowsPerSec)),
    startToClaimMs,
    idleStatementsPerSec: mean(ms.map((m) => m.idle.statementsPerSec)),
    idleEngineStatementsPerSec: mean(ms.map((m) => m.idle.engineStatementsPerSec)),
    fastPathShare: mean(ms.map((m) => m.oneByOne.fastPathShare)),
  };
}

const fmt = (v: number, digits: number) =>
  Number.isFinite(v) ? v.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits }) : 'n/a';

export const COLUMNS: Array<{ head: string; get: (s: Summary) => number; digits: number }> = [
  { head: 'drain wf/s', get: (s) => s.drainWorkflowsPerSec, digits: 0 },
  { head: 'one by one wf/s', get: (s) => s.oneByOneWorkflowsPerSec, digits: 0 },
  ...POLLS.flatMap((p) => {
    const label = pollLabel(p);
    const short = p === undefined ? 'poll default' : `poll ${p}`;
    return [
      { head: `start→claim p50 ms (${short})`, get: (s: Summary) => s.startToClaimMs[label].p50, digits: 1 },
      { head: `p99 ms (${short})`, get: (s: Summary) => s.startToClaimMs[label].p99, digits: 1 },
    ];
  }),
  { head: 'idle stmts/s (server)', get: (s) => s.idleStatementsPerSec, digits: 1 },
  { head: 'idle stmts/s (engine)', get: (s) => s.idleEngineStatementsPerSec, digits: 1 },
];

export function renderShape(shape: Shape, o: Opts, summary: Record<Db, Summary>): string[] {
  const header = ['database', ...COLUMNS.map((c) => c.head)];
  const body = DBS.map((db) => [LABEL[db], ...COLUMNS.map((c) => fmt(c.get(summary[db]), c.digits))]);
  body.push([
    'MariaDB/PostgreSQL',
    ...COLUMNS.map((c) => {
      const pg = c.get(summary.postgres);
      return pg ? `${(c.get(summary.mariadb) / pg).toFixed(2)}x` : 'n/a';
    }),
  ]);
  const all = [header, ...body];
  const widths = header.map((_, i) => Math.max(...all.map((l) => l[i].length)));
  const line = (cells: string[]) => cells.map((c, i) => (i === 0 ? c.padEnd(widths[i]) : c.padStart(widths[i]))).join(' | ');
  return [
    `== ${shape.steps} steps, ${shape.payloadBytes ? `${shape.payloadBytes} B input` : 'no payload'}: ${o.workflows} workflows, ` +
      `concurrency ${o.concurrency}; throughputs the best of ${o.rounds} round(s), start→claim over all rounds' runs ` +
      `(${o.latencyRuns} a round), idle the mean of the rounds ==`,
    '',
    line(header),
    widths.map((w) => '-'.repeat(w)).join('-|-'),
    ...body.map(line),
  ];
}
