/** The Citus benchmark's figures (main.ts measures them) and the report printed from them. */
import { cpus } from 'node:os';
import { SQL } from '../peers/ours-lib.js';
import type { ProbeRow } from './router-probe.js';

export interface Opts {
  workflows: number;
  e2e: number;
  partitions: number;
  nodes: number;
  processes: number;
  concurrency: number;
  callers: number;
  steps: number;
  /** Statements of each kind in the router probe (0: none). */
  probe: number;
}

export interface SetupResult {
  setup: string;
  phases: PhaseFigures[];
  probe: ProbeRow[];
}

export interface NodeFigures {
  role: string;
  cpuMsPerWf: number;
  statementsPerWf: number;
  commitsPerWf: number;
  /** Statements per workflow by partition (worker nodes), "-" for those naming none. */
  byPartition: Record<string, number>;
  byKind: Record<string, number>;
}

export interface PhaseFigures {
  phase: string;
  workflows: number;
  workflowsPerSec: number;
  appCpuMsPerWf: number;
  engineStatementsPerWf: number;
  engineStatements: Record<string, number>;
  nodes: NodeFigures[];
  twoPhase?: { transactionsPerWf: number; preparedPerWf: number; multiNodePerWf: number };
  load: string;
}

/**
 * The engine's name of a statement the bench's pool counted as "other: <its first 60 characters>":
 * in distributed mode the text names the partition (durable_p3.durable_runs), the single-server text
 * does not. Several candidates: joined with "|".
 */
const flat = (t: string) => t.replace(/\s+/g, ' ').trim();
function engineName(key: string): string {
  if (!key.startsWith('other: ')) return key;
  const head = key.slice('other: '.length).replace(/durable_p\d+\./g, '');
  const names = Object.entries(SQL)
    .filter(([, text]) => flat(text).startsWith(head))
    .map(([name]) => name);
  return names.length ? names.join('|') : key;
}

export function byEngineName(counts: Record<string, number>): Record<string, number> {
  const out: Record<string, number> = {};
  for (const [k, v] of Object.entries(counts)) out[engineName(k)] = (out[engineName(k)] ?? 0) + v;
  return out;
}

// ---- the report --------------------------------------------------------------------------------

function table(header: string[], body: string[][]): string {
  const all = [header, ...body];
  const w = header.map((_, i) => Math.max(...all.map((l) => l[i].length)));
  const line = (l: string[]) => l.map((x, i) => (i < 2 ? x.padEnd(w[i]) : x.padStart(w[i]))).join(' | ');
  return [line(header), w.map((x) => '-'.repeat(x)).join('-|-'), ...body.map(line)].join('\n');
}

export function render(results: SetupResult[], o: Opts): string {
  const rows: string[][] = [];
  for (const r of results)
    for (const p of r.phases) {
      const first = (x: string, i: number) => (i === 0 ? x : '');
      const tp = p.twoPhase ? `${p.twoPhase.transactionsPerWf.toFixed(2)} (${p.twoPhase.multiNodePerWf.toFixed(2)} on 2+ nodes)` : '-';
      rows.push([
        `${r.setup} ${p.phase}`,
        'app',
        p.workflowsPerSec.toFixed(0),
        p.appCpuMsPerWf.toFixed(2),
        p.engineStatementsPerWf.toFixed(2),
        '',
        tp,
      ]);
      p.nodes.forEach((x, i) =>
        rows.push([first('', i), x.role, '', x.cpuMsPerWf.toFixed(2), x.statementsPerWf.toFixed(2), x.commitsPerWf.toFixed(2), '']),
      );
      const total = p.nodes.reduce((a, x) => a + x.cpuMsPerWf, 0);
      rows.push(['', 'all servers', '', total.toFixed(2), '', '', '']);
    }
  const header = ['set / phase', 'process', 'wf/s', 'CPU ms/wf', 'statements/wf', 'commits/wf', '2PC tx/wf'];
  const parts: string[] = [
    `Citus: ${o.steps} trivial steps per workflow; drain ${o.workflows} runs (startMany) and end-to-end ${o.e2e} runs (${o.callers} callers, one by one); ` +
      `${o.processes} worker processes × concurrency ${o.concurrency}; distributed: ${o.partitions} partitions on ${o.nodes} worker nodes; ` +
      `${cpus().length} × ${cpus()[0]?.model ?? '?'} shared by every server and the app`,
    'statements/wf: app = the engine statements sent (counted at its pool); a server = statements it executed (pg_stat_statements, no utility statements)',
    table(header, rows),
  ];
  for (const r of results)
    for (const p of r.phases)
      for (const x of p.nodes) {
        const parts2 = Object.entries(x.byPartition).sort(([a], [b]) => a.localeCompare(b, undefined, { numeric: true }));
        if (parts2.length > 1 || (parts2[0] && parts2[0][0] !== '-'))
          parts.push(
            `${r.setup} ${p.phase} ${x.role}: statements/wf by partition ${parts2.map(([k, v]) => `${k} ${v.toFixed(3)}`).join(', ')}; by kind ${Object.entries(
              x.byKind,
            )
              .map(([k, v]) => `${k} ${v.toFixed(2)}`)
              .join(', ')}`,
          );
      }
  const probes = results.flatMap((r) => r.probe.map((p) => ({ setup: r.setup, ...p })));
  if (probes.length) {
    const roles = [...new Set(probes.flatMap((p) => Object.keys(p.cpuUsPerStatement)))];
    parts.push(
      `Router probe: single-row statements by primary key on a run's partition (read: SELECT, write: UPDATE of one row), ${o.callers} connections; CPU µs per statement per server`,
      table(
        ['route', 'statement', 'statements/s', ...roles.map((r) => `${r} µs`), 'all servers µs'],
        probes.map((p) => [
          p.via,
          p.kind,
          p.statementsPerSec.toFixed(0),
          ...roles.map((r) => (p.cpuUsPerStatement[r] === undefined ? '' : p.cpuUsPerStatement[r].toFixed(0))),
          Object.values(p.cpuUsPerStatement)
            .reduce((x, y) => x + y, 0)
            .toFixed(0),
        ]),
      ),
    );
  }
  for (const r of results)
    for (const p of r.phases) {
      parts.push(
        `${r.setup} ${p.phase}: engine statements/wf ${Object.entries(p.engineStatements)
          .sort((a, b) => b[1] - a[1])
          .map(([k, v]) => `${k} ${v.toFixed(2)}`)
          .join(', ')}` +
          (p.twoPhase
            ? `; two-phase commits ${(p.twoPhase.transactionsPerWf * p.workflows).toFixed(0)} (${p.twoPhase.preparedPerWf.toFixed(3)} prepared/wf, ${p.twoPhase.multiNodePerWf.toFixed(3)}/wf prepared on 2+ nodes)`
            : '') +
          `; load after ${p.load}`,
      );
    }
  return parts.join('\n') + '\n';
}
