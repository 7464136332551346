import type { TestingModule } from '@nestjs/testing';
import { WorkflowRegistry } from '../definitions/registry.js';
import { InvalidArgumentError } from '../errors/index.js';
import { RUN_EXPORT_FORMAT, type RunExport } from '../engine/run-export.js';
import { replayAgainstRecording } from '../workflow/replay.js';
import { WorkflowExplorer } from '../nest/workflow-explorer.js';

/** What replayRun() found: the current code agrees with the recording up to `replayed` positions. */
export interface ReplayResult {
  runId: string;
  workflowName: string;
  /** Recorded positions the code went through (each checked by name, its recorded result fed back). */
  replayed: number;
  /**
   * 'returned' / 'threw': the workflow ran to its end on recorded results alone (output / error; a
   * run that threw has its recorded compensations replayed too);
   * 'recording-ended': it went past the last recorded position (the run was still going when
   * exported, or the code appends steps: safe);
   * 'stalled': it awaited something that is not a durable operation, and was checked up to there.
   */
  outcome: 'returned' | 'threw' | 'recording-ended' | 'stalled';
  output?: unknown;
  error?: unknown;
}

/** Where the workflows' current code comes from: a booted kit, a compiled (not initialised) Nest testing module, or a registry. */
export type ReplaySource = { engine: { registry: WorkflowRegistry } } | TestingModule | WorkflowRegistry;

function registryOf(source: ReplaySource): WorkflowRegistry {
  if (source instanceof WorkflowRegistry) return source;
  if ('engine' in source && source.engine?.registry instanceof WorkflowRegistry) return source.engine.registry;
  const registry = new WorkflowRegistry();
  (source as TestingModule).get(WorkflowExplorer, { strict: false }).explore(registry);
  return registry;
}

/**
 * Replays an exported run (WorkflowClient.exportRun, GET {admin}/runs/:id/export, the dashboard's
 * "Export JSON", `npx nestjs-durable runs export`) against the current code, without a database and
 * without running any step body. It is the engine's own replay — the one `npx nestjs-durable verify`
 * runs before a deploy (workflow/replay.ts) — so both give the same verdict: a change that the
 * recorded run could not survive (a step inserted, changed or reordered where the run has been)
 * throws the engine's DeterminismError (naming the run, the position and both steps), as the run
 * would fail in production; removing steps the run has passed, or adding steps where it has not been
 * yet, replays.
 */
export async function replayRun(recording: RunExport | string, source: ReplaySource): Promise<ReplayResult> {
  const rec = (typeof recording === 'string' ? JSON.parse(recording) : recording) as RunExport;
  if (rec?.format !== RUN_EXPORT_FORMAT || !rec.run || !Array.isArray(rec.steps)) {
    throw new InvalidArgumentError(
      `replayRun(): not an exported run (expected format "${RUN_EXPORT_FORMAT}", got ${JSON.stringify(rec?.format)}): ` +
        'export one with WorkflowClient.exportRun(id), GET <admin path>/runs/:id/export, the dashboard\'s "Export JSON" ' +
        'or npx nestjs-durable runs export <id>.',
    );
  }
  const def = registryOf(source).get(rec.run.workflowName);
  const r = await replayAgainstRecording(def, {
    id: rec.run.id,
    input: rec.run.input,
    context: rec.run.context ?? null,
    steps: rec.steps.map((s) => ({ ...s })),
  });
  if (r.verdict === 'nondeterministic') throw r.error;
  const result: ReplayResult = { runId: rec.run.id, workflowName: rec.run.workflowName, replayed: r.replayed, outcome: r.outcome };
  if (r.outcome === 'returned') result.output = r.output;
  if (r.outcome === 'threw') result.error = r.error;
  return result;
}
