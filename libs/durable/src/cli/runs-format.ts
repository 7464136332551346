/** Text output of `nestjs-durable runs list|show`: aligned columns, times in UTC, stored text escaped (safeText). */
import { safeText } from './safe-text.js';

interface ListItem {
  id: string;
  workflowName: string;
  status: string;
  stepCount: number;
  createdAt: string;
  errorMessage: string | null;
  outputSummary?: string | null;
  waits?: Array<{ kind: string; key: string | null }> | null;
  tags?: string[];
}

/** The last column: the error, else what a WAITING run waits for, else the start of the output; then the tags. */
function outcome(r: ListItem): string {
  const waits = r.waits?.length
    ? `waits for ${r.waits.map((w) => (w.kind === 'recv' ? `message ${w.key}` : w.kind === 'child' ? `child ${w.key}` : w.kind === 'group' ? `group of children (step ${w.key})` : 'timer')).join(' or ')}`
    : null;
  const tags = r.tags?.length ? ` [${r.tags.join(',')}]` : '';
  return (r.errorMessage ?? waits ?? r.outputSummary ?? '') + tags;
}

export const time = (iso: string | null | undefined) => (iso ? iso.replace('T', ' ').replace(/\.\d+Z$/, 'Z') : '—');
const clip = (s: string, n: number) => (s.length > n ? `${s.slice(0, n - 1)}…` : s);

/** Aligned columns; every cell escaped first, so a control character cannot break a row. */
export function table(cells: string[][]): string {
  const rows = cells.map((r) => r.map(safeText));
  const widths = rows[0].map((_, i) => Math.max(...rows.map((r) => r[i].length)));
  return rows.map((r) => r.map((c, i) => (i === r.length - 1 ? c : c.padEnd(widths[i]))).join('  ')).join('\n');
}

export function formatRunList(page: {
  items: ListItem[];
  total: number;
  countsCapped: string[];
  countsEstimated?: boolean;
  nextCursor: string | null;
}): string {
  if (!page.items.length) return 'No runs match.';
  const rows = [['ID', 'WORKFLOW', 'STATUS', 'STEPS', 'CREATED', 'ERROR / RESULT [TAGS]']];
  for (const r of page.items) {
    rows.push([r.id, r.workflowName, r.status, String(r.stepCount), time(r.createdAt), clip(outcome(r), 80)]);
  }
  const more = page.nextCursor ? ` (showing ${page.items.length}; narrow the filters or raise --limit)` : '';
  const about = page.countsEstimated ? '≈' : '';
  return `${table(rows)}\n${about}${page.total}${page.countsCapped.length ? '+' : ''} run(s) match${more}${about && ' (estimated: counting exactly took over a second)'}.`;
}

interface Detail {
  id: string;
  workflowName: string;
  queue: string;
  status: string;
  createdAt: string | null;
  startedAt: string | null;
  finishedAt: string | null;
  tags?: string[];
  context?: unknown;
  error?: unknown;
  output?: unknown;
  steps: Array<{
    seq: number;
    name: string;
    status: string;
    attempts: number;
    durationMs: number | null;
    error?: unknown;
    wait?: { until: string | null };
  }>;
  totals: Record<string, number>;
}

export function formatRun(r: Detail): string {
  const lines = [
    `${r.id}  ${r.workflowName}  ${r.status}`,
    `queue ${r.queue} · created ${time(r.createdAt)} · started ${time(r.startedAt)} · finished ${time(r.finishedAt)}`,
  ];
  if (r.tags?.length) lines.push(`tags ${r.tags.join(', ')}`);
  if (r.context !== null && r.context !== undefined) lines.push(`context ${clip(JSON.stringify(r.context), 200)}`);
  const err = r.error as { name?: string; message?: string } | null | undefined;
  if (err) lines.push(`error ${err.name ?? 'Error'}: ${err.message ?? JSON.stringify(err)}`);
  if (r.output !== null && r.output !== undefined) lines.push(`output ${clip(JSON.stringify(r.output), 200)}`);
  for (let i = 0; i < lines.length; i++) lines[i] = safeText(lines[i]);
  if (r.steps.length) {
    lines.push('');
    const rows = [['#', 'STEP', 'STATUS', 'TRIES', 'DURATION']];
    for (const s of r.steps) {
      const duration =
        s.status === 'WAITING'
          ? `waiting${s.wait?.until ? ` until ${time(s.wait.until)}` : ''}`
          : s.durationMs === null
            ? '—'
            : `${Math.round(s.durationMs)} ms`;
      rows.push([String(s.seq), s.name, s.status, String(s.attempts), duration]);
    }
    lines.push(table(rows));
    if (r.totals.steps > r.steps.length) lines.push(`(first ${r.steps.length} of ${r.totals.steps} steps)`);
  }
  return lines.join('\n');
}
