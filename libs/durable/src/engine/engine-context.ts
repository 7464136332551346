import type { ResolvedEngineOptions } from '../config/options.js';
import type { WorkflowRegistry } from '../definitions/registry.js';
import type { Store } from '../store/store.js';
import type { Telemetry } from '../telemetry/telemetry.js';
import type { Scheduler } from '../worker/scheduler.js';
import type { Worker } from '../worker/worker.js';
import type { LocalResults } from './local-results.js';
import type { StartBatcher } from './start-batch.js';

/** What the engine's operations (starting, controlling and reading runs) share. */
export interface EngineContext {
  readonly registry: WorkflowRegistry;
  readonly options: ResolvedEngineOptions;
  readonly store: Store;
  readonly worker: Worker;
  readonly local: LocalResults;
  /** Group commit of concurrent starts made outside a caller's transaction. */
  readonly starts: StartBatcher;
  /** The scheduler when it runs in this process (woken when a schedule changes here). */
  readonly scheduler: Scheduler | null;
  /** Traces and metrics (no-ops without OpenTelemetry). */
  readonly telemetry: Telemetry;
}
