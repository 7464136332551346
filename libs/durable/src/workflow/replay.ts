import { Telemetry } from '../telemetry/telemetry.js';
import { EngineClock } from '../config/clock.js';
import { setImmediate as nextTurn } from 'node:timers/promises';
import { DeterminismError, type DeterminismKind } from '../errors/index.js';
import { decode } from '../codec/codec.js';
import { resolveEngineOptions } from '../config/options.js';
import type { WorkflowDefinition } from '../definitions/definitions.js';
import type { RecordedStep } from '../store/rows.js';
import type { ExecutionServices } from './execution-services.js';
import { runCompensations } from './compensation.js';
import { durableScope, RunContext } from './run-context.js';

/** A run as recorded: what a replay needs (e.g. a row of durable_runs with its durable_steps, or a run's JSON). */
export interface RecordedRun {
  id: string;
  /** The run's input as stored (codec form: durable_runs.input). */
  input: unknown;
  /** The app's context the run was started with (codec form: durable_runs.context); absent or null without one. */
  context?: unknown;
  /** Its checkpoints (durable_steps rows: seq, name, status, output, error). */
  steps: readonly RecordedStep[];
}

/** Where and how a replay found the code departing from the run's checkpoints. */
export interface ReplayMismatch {
  /** The position (step seq) where the run recorded `recorded`. */
  seq: number;
  recorded: string;
  /** The step the code calls there. */
  actual: string;
  kind: DeterminismKind;
}

/** What replaying a run's checkpoints against a workflow's code showed. */
export interface ReplayResult {
  runId: string;
  /**
   * `ok`: the code replays every checkpoint it reached; `nondeterministic`: it departs from them
   * (`mismatch` says where); `error`: the workflow threw during the replay (`error`), which a real
   * execution would too.
   */
  verdict: 'ok' | 'nondeterministic' | 'error';
  /**
   * How the replay ended: the workflow `returned` or `threw`; it reached work the run has not done
   * yet (`recording-ended`: the first operation that would run a step, write or wait; see
   * `frontier`); or it stopped moving elsewhere (`stalled`: awaiting something that is not a durable
   * operation). The same words as the testing kit's replayRun() (nestjs-durable/testing).
   */
  outcome: 'returned' | 'threw' | 'recording-ended' | 'stalled';
  /** @deprecated Read `outcome` (the same, with `frontier` called `recording-ended`). */
  ended: 'returned' | 'threw' | 'frontier' | 'stalled';
  /** The first operation the replay did not have a completed checkpoint for. */
  frontier: { seq: number; name: string } | null;
  /** Recorded positions the replay went through (each matched by name, its recorded result fed back). */
  replayed: number;
  mismatch: ReplayMismatch | null;
  /** What the workflow returned (`outcome: 'returned'`). */
  output?: unknown;
  error: Error | null;
}

export interface ReplayOptions {
  /** Event-loop turns without a new durable operation after which the replay counts as ended. Default 3. */
  idleTurns?: number;
}

const REPLAY_OPTIONS = resolveEngineOptions({ worker: false, schedules: false });

/**
 * Replays a recorded run against a workflow's code, and nothing else: the workflow body runs (it is
 * deterministic by contract) with every durable operation answered from the run's checkpoints, by
 * the same matching rule as a real execution (step-matcher.ts); no step body runs, no statement is
 * sent, no wait starts — an operation the run has not completed never settles, and ends the replay.
 * A body that throws is followed, as in a real execution, by the run's compensations, replayed from
 * their checkpoints too (their order is checked the same way). Engine-level and database-free:
 * `verify` feeds it runs from the database; the testing kit's replayRun() feeds it an exported run.
 */
export async function replayAgainstRecording(def: WorkflowDefinition, run: RecordedRun, opts: ReplayOptions = {}): Promise<ReplayResult> {
  const ctx = new RunContext(run.id, 0, [...run.steps], replayServices(run.id), { replayOnly: true });
  if (run.context != null) ctx.appContext = decode(run.context);
  let ended: ReplayResult['ended'] | null = null;
  let thrown: unknown = null;
  let threw = false;
  let output: unknown;
  void durableScope
    .run({ run: ctx }, () => def.run(decode(run.input)))
    .then(
      (value) => {
        output = value;
        ended = 'returned';
      },
      (err: unknown) => {
        thrown = err;
        threw = true;
        if (ctx.fatal || err instanceof DeterminismError) return void (ended = 'threw');
        // The executor undoes a failed (or cancelled) run's steps after its body: so does the replay.
        const done = () => void (ended = 'threw');
        void durableScope.run({ run: ctx }, () => runCompensations(ctx, 'failed')).then(done, done);
      },
    );
  const idleTurns = opts.idleTurns ?? 3;
  let idle = 0;
  let seen = -1;
  while (ended === null && !ctx.fatal) {
    await nextTurn();
    if (ctx.operations !== seen) {
      seen = ctx.operations;
      idle = 0;
    } else if (++idle >= idleTurns) ended = threw ? 'threw' : ctx.frontier ? 'frontier' : 'stalled'; // threw: its compensations reached the frontier
  }
  ctx.stop('shutdown');
  const how = ended as ReplayResult['ended'] | null; // set by the callbacks above
  const base = { runId: run.id, frontier: ctx.frontier, replayed: ctx.frontier?.seq ?? ctx.position };
  const said = (e: ReplayResult['ended']) => ({ outcome: e === 'frontier' ? ('recording-ended' as const) : e, ended: e });
  const fatal = ctx.fatal ?? (thrown instanceof DeterminismError ? thrown : null);
  if (fatal instanceof DeterminismError) {
    const { seq, recorded, actual, kind } = fatal;
    return { ...base, verdict: 'nondeterministic', ...said(how ?? 'threw'), mismatch: { seq, recorded, actual, kind }, error: fatal };
  }
  if (how === 'returned') return { ...base, verdict: 'ok', ...said(how), mismatch: null, output, error: null };
  const error = how === 'threw' ? (thrown instanceof Error ? thrown : new Error(String(thrown))) : null;
  return { ...base, verdict: error ? 'error' : 'ok', ...said(how!), mismatch: null, error };
}

/**
 * @deprecated Renamed replayAgainstRecording: `replayRun` is the testing kit's (nestjs-durable/testing),
 * which replays an exported run against a registry or Nest module.
 */
export const replayRun = replayAgainstRecording;

/**
 * The clock of a replay: past every recorded wake time, so a sleep the run recorded counts as over
 * and the replay checks what follows it (the run's next checkpoint, or the frontier if it is still
 * asleep). The real clock would stop a replay at every sleep still due by this machine's time, e.g.
 * all of a recording made under the testing kit's virtual time.
 */
class EndOfTime extends EngineClock {
  override now(): number {
    return 8.64e15; // the largest Date
  }
}

/** What a replay's run context gets from the engine: nothing that can reach a database or start work. */
function replayServices(runId: string): ExecutionServices {
  const refuse = (): never => {
    throw new Error(`replay of run ${runId}: a replay sends no statement and starts no work (this is a bug in nestjs-durable)`);
  };
  return {
    store: {
      sql: { dialect: 'postgres', query: async () => refuse(), execute: async () => refuse(), transaction: async () => refuse() },
      history: false,
      layout: { partitions: null },
    },
    prisma: null,
    options: REPLAY_OPTIONS,
    clock: new EndOfTime(),
    stepHooks: {},
    telemetry: new Telemetry(REPLAY_OPTIONS.telemetry), // never loaded: no spans, no metrics
    writes: { step: async () => refuse(), end: async () => refuse() },
    newRun: refuse,
  };
}
