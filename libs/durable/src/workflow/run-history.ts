import { errorText } from '../errors/error-text.js';
import { insertRunEvent } from '../store/history.js';
import type { ExecutionServices } from './execution-services.js';

/**
 * Writes one history row on its own statement (rare paths: a retried step, a lost lease), without
 * waiting for it and without failing anything if it cannot be written. Off with `history: false`.
 * The promise settles once it is written or given up (never rejects).
 */
export function recordRunEvent(services: ExecutionServices, runId: string, kind: string, detail: Record<string, unknown>): Promise<void> {
  return insertRunEvent(services.store, runId, kind, detail).then(
    () => {},
    (err: Error) => {
      services.options.logger.debug?.(`run ${runId}: could not record history event "${kind}" (${errorText(err)})`);
    },
  );
}
