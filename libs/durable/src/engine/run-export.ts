import { getRun } from '../store/runs.js';
import type { RunStatus } from '../store/rows.js';
import type { EngineContext } from './engine-context.js';

/** The format tag of an exported run; replayRun() (nestjs-durable/testing) refuses other formats. */
export const RUN_EXPORT_FORMAT = 'nestjs-durable.run/1';

/**
 * A run as recorded, for replay against other code (nestjs-durable/testing replayRun) and for bug
 * reports: its input and every checkpoint as stored (values in the library's codec form, so a
 * replay decodes them exactly as the engine does), in step order.
 */
export interface RunExport {
  format: typeof RUN_EXPORT_FORMAT;
  exportedAt: string;
  run: {
    id: string;
    workflowName: string;
    status: RunStatus;
    input: unknown;
    /** The app's context the run was started with (engine option `context`), as stored; null without one. */
    context: unknown;
    output: unknown;
    error: unknown;
    appVersion: string | null;
    createdAt: string;
    finishedAt: string | null;
  };
  steps: Array<{
    seq: number;
    name: string;
    status: 'SUCCEEDED' | 'FAILED' | 'WAITING' | 'CANCELLED';
    output: unknown;
    error: unknown;
    attempts: number;
    /** The compensation record as stored (`pivot`: the step is the run's pivot; a pivot with nothing to undo has no `by`). */
    compensation: { by?: string; args?: unknown; pivot?: true } | null;
    compensates: number | null;
  }>;
}

const iso = (v: unknown) => (v == null ? null : new Date(v as string).toISOString());

/** The run with its checkpoints as a RunExport, or null if there is no such run. */
export async function exportRun(ctx: EngineContext, id: string): Promise<RunExport | null> {
  const r = await getRun(ctx.store, id);
  if (!r) return null;
  return {
    format: RUN_EXPORT_FORMAT,
    exportedAt: new Date().toISOString(),
    run: {
      id: r.id,
      workflowName: r.workflow_name,
      status: r.status,
      input: r.input ?? null,
      context: r.context ?? null,
      output: r.output ?? null,
      error: r.error ?? null,
      appVersion: r.app_version,
      createdAt: iso(r.created_at)!,
      finishedAt: iso(r.finished_at),
    },
    steps: r.steps.map((s) => ({
      seq: s.seq,
      name: s.name,
      status: s.status,
      output: s.output ?? null,
      error: s.error ?? null,
      attempts: s.attempts,
      compensation: s.compensation ?? null,
      compensates: s.compensates ?? null,
    })),
  };
}
