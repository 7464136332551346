import type { TestingModule } from '@nestjs/testing';
import { Telemetry } from '../telemetry/telemetry.js';
import { EngineClock } from '../config/clock.js';
import { resolveEngineOptions, silentLogger } from '../config/options.js';
import { decode } from '../codec/codec.js';
import { WorkflowRegistry } from '../definitions/registry.js';
import { DeterminismError, InvalidArgumentError } from '../errors/index.js';
import { RUN_EXPORT_FORMAT, type RunExport } from '../engine/run-export.js';
import type { RecordedStep } from '../store/rows.js';
import type { Store } from '../store/store.js';
import { runCompensations } from '../workflow/compensation.js';
import type { ExecutionServices } from '../workflow/execution-services.js';
import { durableScope, ExecutionStopped, RunContext } from '../workflow/run-context.js';
import type { StepMatch } from '../workflow/step-matcher.js';
import { WorkflowExplorer } from '../nest/workflow-explorer.js';

/** What replayRun() found: the current code agrees with the recording up to `replayed` positions. */
export interface ReplayResult {
  runId: string;
  workflowName: string;
  /** Recorded positions the code went through (each checked by name, its recorded result fed back). */
  replayed: number;
  /**
   * 'returned' / 'threw': the workflow ran to its end on recorded results alone (output / error);
   * 'recording-ended': it went past the last recorded position (the run was still going when exported).
   */
  outcome: 'returned' | 'threw' | 'recording-ended';
  output?: unknown;
  error?: unknown;
}

/** Where the workflows' current code comes from: a booted kit, a compiled (not initialised) Nest testing module, or a registry. */
export type ReplaySource = { engine: { registry: WorkflowRegistry } } | TestingModule | WorkflowRegistry;

/**
 * The recording is over: an operation with no checkpoint at its position (or a wait still pending)
 * ends the replay there. Positions come from the engine's own matching rule (step-matcher.ts).
 */
class ReplayContext extends RunContext {
  consumed = 0;
  override match(name: string): StepMatch {
    return this.consume(super.match(name));
  }
  override matchPatch(name: string): StepMatch | null {
    const m = super.matchPatch(name);
    return m && this.consume(m);
  }
  override recordedStep(seq: number): RecordedStep | undefined {
    return this.consume({ seq, recorded: super.recordedStep(seq) }).recorded;
  }
  private consume(m: StepMatch): StepMatch {
    if (!m.recorded || m.recorded.status === 'WAITING') {
      this.stop('suspended');
      throw new ExecutionStopped('suspended');
    }
    this.consumed = Math.max(this.consumed, m.seq + 1);
    return m;
  }
}

/** A clock past every recorded wake time: a recorded sleep is over on replay. */
class EndOfTime extends EngineClock {
  override now(): number {
    return 8.64e15;
  }
}

function registryOf(source: ReplaySource): WorkflowRegistry {
  if (source instanceof WorkflowRegistry) return source;
  if ('engine' in source && source.engine?.registry instanceof WorkflowRegistry) return source.engine.registry;
  const registry = new WorkflowRegistry();
  (source as TestingModule).get(WorkflowExplorer, { strict: false }).explore(registry);
  return registry;
}

/** Nothing of a replay reaches a database: any statement would mean a step body or a write, which a replay never makes. */
const noDatabase: Store = {
  history: false,
  sql: {
    query: () => Promise.reject(new ExecutionStopped('suspended')),
    transaction: () => Promise.reject(new ExecutionStopped('suspended')),
  },
};

/**
 * Replays an exported run (WorkflowClient.exportRun, GET {admin}/runs/:id/export, the dashboard's
 * "Export JSON") against the current code, without a database and without running any step body:
 * the workflow is run from the top with every recorded result fed back in order; a failed run's
 * compensations are replayed too. A change of the code that the recorded run could not survive —
 * a step inserted, removed or reordered before the end of the recording — throws the engine's
 * DeterminismError (naming the run, the position and both steps), so a unit test fails the way
 * the run would fail in production. Also throws a DeterminismError when the workflow now ends
 * before recorded steps it used to call.
 */
export async function replayRun(recording: RunExport | string, source: ReplaySource): Promise<ReplayResult> {
  const rec = (typeof recording === 'string' ? JSON.parse(recording) : recording) as RunExport;
  if (rec?.format !== RUN_EXPORT_FORMAT || !rec.run || !Array.isArray(rec.steps)) {
    throw new InvalidArgumentError(
      `replayRun(): not an exported run (expected format "${RUN_EXPORT_FORMAT}", got ${JSON.stringify(rec?.format)}): ` +
        'export one with WorkflowClient.exportRun(id), GET <admin path>/runs/:id/export or the dashboard\'s "Export JSON".',
    );
  }
  const def = registryOf(source).get(rec.run.workflowName);
  const options = resolveEngineOptions({ logger: silentLogger, history: false });
  const services: ExecutionServices = {
    store: noDatabase,
    prisma: null,
    options,
    clock: new EndOfTime(),
    stepHooks: {},
    telemetry: new Telemetry(options.telemetry), // never loaded: no spans, no metrics
    writes: { step: () => Promise.reject(new ExecutionStopped('suspended')), end: () => Promise.reject(new ExecutionStopped('suspended')) },
    newRun: () => {
      throw new ExecutionStopped('suspended');
    },
  };
  const steps: RecordedStep[] = rec.steps.map((s) => ({ ...s }));
  const ctx = new ReplayContext(rec.run.id, 0, steps, services);
  const base = { runId: rec.run.id, workflowName: rec.run.workflowName };
  let result: Pick<ReplayResult, 'outcome' | 'output' | 'error'>;
  try {
    const output = await durableScope.run({ run: ctx }, () => def.run(decode(rec.run.input)));
    await ctx.settled();
    result = { outcome: 'returned', output };
  } catch (err) {
    await ctx.settled();
    result = { outcome: 'threw', error: err };
    if (!ctx.fatal && !ctx.stopped && rec.run.status !== 'SUCCEEDED') {
      // The run failed (or was cancelled): the engine ran its compensations after the body; so does the replay.
      await durableScope
        .run({ run: ctx }, () => runCompensations(ctx, rec.run.status === 'CANCELLED' ? 'cancelled' : 'failed'))
        .catch(() => {});
    }
  }
  if (ctx.fatal) throw ctx.fatal;
  if (ctx.stopped) return { ...base, replayed: ctx.consumed, outcome: 'recording-ended' };
  const left = steps.find((s) => s.seq >= ctx.consumed);
  if (left)
    throw new DeterminismError(
      rec.run.id,
      left.seq,
      left.name,
      `(nothing: the workflow ${result.outcome === 'returned' ? 'returned' : 'threw'} before it)`,
    );
  return { ...base, replayed: ctx.consumed, ...result };
}
