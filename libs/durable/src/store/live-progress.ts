/** The live progress of a RUNNING run's steps, as the admin API shows it (both dialects' run detail). */
import { iso, parsed } from './store.js';

/**
 * The latest Durable.progress() of the steps executing now: those without a checkpoint among the
 * steps returned (a step recorded since has its result instead). null when there is none.
 */
export function liveProgress(
  stored: unknown,
  steps: Array<Record<string, unknown>>,
): { at: string | null; steps: Array<Record<string, unknown>> } | null {
  const p = parsed<{ at?: string; steps?: Record<string, { step: string; value: unknown }> } | null>(stored);
  if (!p?.steps || typeof p.steps !== 'object') return null;
  const recorded = new Set(steps.map((s) => Number(s.seq)));
  const live = Object.entries(p.steps)
    .map(([seq, v]) => ({ seq: Number(seq), step: v?.step ?? null, value: v?.value ?? null }))
    .filter((s) => !recorded.has(s.seq))
    .sort((a, b) => a.seq - b.seq);
  return live.length ? { at: iso(p.at), steps: live } : null;
}
