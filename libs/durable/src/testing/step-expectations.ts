import { StepSequenceMismatchError } from '../errors/index.js';
import type { RunView } from '../engine/run-view.js';

/** One expected step: its name, or its name with the status and attempts it must have. */
export type ExpectedStep = string | { name: string; status?: 'SUCCEEDED' | 'FAILED' | 'WAITING'; attempts?: number };

type Step = RunView['steps'][number];

/** The engine's own bookkeeping steps (durable.sleep, durable.recv:<topic>, durable.now, …). */
export const isDurableStep = (s: { name: string }) => s.name.startsWith('durable.');

function describe(s: Step | undefined): string {
  if (!s) return '(none)';
  const err = s.error as { message?: string } | null;
  const extra = [
    s.status !== 'SUCCEEDED' ? s.status : '',
    s.attempts > 1 ? `${s.attempts} attempts` : '',
    err?.message ? `"${err.message}"` : '',
  ]
    .filter(Boolean)
    .join(', ');
  return extra ? `${s.name} (${extra})` : s.name;
}

function label(e: ExpectedStep | undefined): string {
  if (e === undefined) return '(none)';
  if (typeof e === 'string') return e;
  const parts = [e.status, e.attempts !== undefined ? `${e.attempts} attempts` : ''].filter(Boolean);
  return parts.length ? `${e.name} (${parts.join(', ')})` : e.name;
}

function matches(e: ExpectedStep | undefined, s: Step | undefined): boolean {
  if (e === undefined || s === undefined) return e === undefined && s === undefined;
  if (typeof e === 'string') return e === s.name;
  return e.name === s.name && (e.status === undefined || e.status === s.status) && (e.attempts === undefined || e.attempts === s.attempts);
}

/**
 * Checks a run's steps against the expected sequence (by default leaving out the engine's own
 * `durable.*` steps). Throws a StepSequenceMismatchError with both sequences side by side and the
 * first difference marked.
 */
export function checkSteps(run: RunView, expected: ExpectedStep[], opts: { durable?: boolean } = {}): void {
  const steps = opts.durable ? run.steps : run.steps.filter((s) => !isDurableStep(s));
  const n = Math.max(steps.length, expected.length);
  let first = -1;
  for (let i = 0; i < n && first < 0; i++) if (!matches(expected[i], steps[i])) first = i;
  if (first < 0) return;
  const rows = Array.from({ length: n }, (_, i) => {
    const mark = i === first ? '✗' : i < first ? ' ' : '·';
    return `  ${mark} ${String(i).padStart(2)}  ${label(expected[i]).padEnd(34)} ${describe(steps[i])}`;
  });
  const err = run.error as { message?: string } | null;
  throw new StepSequenceMismatchError(
    run.id,
    `Run ${run.id} (${run.workflowName}, ${run.status}${err?.message ? `: ${err.message}` : ''}) ` +
      `differs from the expected steps at position ${first}${opts.durable ? '' : " (the engine's durable.* steps left out)"}:\n` +
      `      #   ${'expected'.padEnd(34)} actual\n${rows.join('\n')}`,
  );
}
