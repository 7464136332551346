import { DurableError } from './durable-error.js';

/**
 * Resuming a run would make it a second active run of its dedupe key, or a second pending run of its
 * debounce key (singleton and debounce allow one): another run holds the key now.
 */
export class KeyConflictError extends DurableError {
  constructor(
    readonly runId: string,
    readonly index: 'dedupe' | 'debounce',
    detail: string,
  ) {
    super(
      'KEY_CONFLICT',
      `Cannot resume run "${runId}": another run holds its ${index === 'dedupe' ? 'dedupe key (one active run per workflow and key)' : 'debounce key (one pending run per workflow and key)'}${detail ? ` — ${detail}` : ''}. Cancel that run or wait until it has ${index === 'dedupe' ? 'ended' : 'started'}, then resume.`,
    );
  }
}

/**
 * The key index a unique violation is about, when it is one of the flow-control keys; null otherwise.
 * PostgreSQL says 23505 and names the constraint; MariaDB's driver says errno 1062, "Duplicate entry
 * '…' for key '…'" (the text also reaches through Prisma's adapter).
 */
export function keyConflictOf(err: unknown): { index: 'dedupe' | 'debounce'; detail: string } | null {
  let e: unknown = err;
  for (let depth = 0; e && typeof e === 'object' && depth < 5; depth++) {
    const { code, errno, constraint, message, detail } = e as {
      code?: unknown;
      errno?: unknown;
      constraint?: unknown;
      message?: unknown;
      detail?: unknown;
    };
    const text = `${String(constraint ?? '')} ${String(message ?? '')}`;
    const duplicate = /Duplicate entry '.*' for key/s.exec(text);
    if (code === '23505' || errno === 1062 || duplicate || /unique/i.test(text)) {
      const d = typeof detail === 'string' ? detail : duplicate ? duplicate[0].replace(/ for key$/, '') : '';
      if (text.includes('durable_runs_dedupe_idx')) return { index: 'dedupe', detail: d };
      if (text.includes('durable_runs_debounce_idx')) return { index: 'debounce', detail: d };
    }
    e = (e as { cause?: unknown }).cause;
  }
  return null;
}
