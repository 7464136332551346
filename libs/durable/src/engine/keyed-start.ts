import { checkIdentifierCharacters, showIdentifier } from '../config/identifiers.js';
import { DAY_MS, MAX_ID_LENGTH } from '../config/limits.js';
import { IdempotencyConflictError, InvalidArgumentError } from '../errors/index.js';
import { debounceStart, dedupeHolder, insertDeduped } from '../store/keyed-starts.js';
import type { DebounceStart, NewRun } from '../store/rows.js';
import type { Store } from '../store/store.js';
import type { StartOptions, StartOutcome } from './start-options.js';
import { refuseInDistributedMode } from './distributed-mode.js';

const DEBOUNCE_KEYS = ['key', 'periodMs', 'maxDelayMs', 'input'];
const show = showIdentifier;
const isKey = (v: unknown): v is string => typeof v === 'string' && v.length > 0 && v.length <= MAX_ID_LENGTH;
const isMs = (v: unknown) => typeof v === 'number' && Number.isInteger(v) && v >= 1 && v <= DAY_MS;

/** The start options dedupeKey and debounce, checked (InvalidArgumentError listing every problem). */
export function keyedStart(opts: StartOptions): { dedupeKey?: string; debounce?: DebounceStart } {
  const problems: string[] = [];
  if (opts.dedupeKey !== undefined && !isKey(opts.dedupeKey)) {
    problems.push(`dedupeKey must be a non-empty string of at most ${MAX_ID_LENGTH} characters (got ${show(opts.dedupeKey)})`);
  }
  let debounce: DebounceStart | undefined;
  if (opts.debounce !== undefined) {
    const d = opts.debounce as unknown as Record<string, unknown> | null;
    if (!d || typeof d !== 'object' || Array.isArray(d)) {
      problems.push(`debounce must be an object { key, periodMs, maxDelayMs?, input? } (got ${show(d)})`);
    } else {
      for (const k of Object.keys(d))
        if (!DEBOUNCE_KEYS.includes(k)) problems.push(`debounce has no option "${k}" (it has ${DEBOUNCE_KEYS.join(', ')})`);
      if (!isKey(d.key))
        problems.push(`debounce.key must be a non-empty string of at most ${MAX_ID_LENGTH} characters (got ${show(d.key)})`);
      if (!isMs(d.periodMs))
        problems.push(`debounce.periodMs must be a whole number of ms between 1 and ${DAY_MS} (got ${show(d.periodMs)})`);
      if (d.maxDelayMs !== undefined && (!isMs(d.maxDelayMs) || (isMs(d.periodMs) && (d.maxDelayMs as number) < (d.periodMs as number)))) {
        problems.push(`debounce.maxDelayMs must be a whole number of ms between periodMs and ${DAY_MS} (got ${show(d.maxDelayMs)})`);
      }
      if (d.input !== undefined && d.input !== 'first' && d.input !== 'last') {
        problems.push(`debounce.input must be 'first' or 'last' (got ${show(d.input)})`);
      }
      if (opts.id !== undefined)
        problems.push(
          'debounce cannot be combined with id: a debounced start may join the run of an earlier start (read its id from the handle)',
        );
      if (opts.runAt !== undefined || opts.delayMs !== undefined) problems.push('debounce decides when the run starts: drop runAt/delayMs');
      if (opts.dedupeKey !== undefined)
        problems.push('debounce and dedupeKey cannot be combined: a debounced start already joins the pending run of its key');
      debounce = {
        key: d.key as string,
        periodMs: d.periodMs as number,
        maxDelayMs: (d.maxDelayMs as number | undefined) ?? null,
        input: (d.input as 'first' | 'last' | undefined) ?? 'last',
      };
    }
  }
  if (problems.length)
    throw new InvalidArgumentError(`start(): ${problems.join('; ')}.`, opts.debounce !== undefined ? 'debounce' : 'dedupeKey');
  if (opts.dedupeKey !== undefined) checkIdentifierCharacters('start()', 'dedupeKey', opts.dedupeKey);
  if (debounce) checkIdentifierCharacters('start()', 'debounce.key', debounce.key);
  return { ...(opts.dedupeKey !== undefined && { dedupeKey: opts.dedupeKey }), ...(debounce && { debounce }) };
}

/** How many times a start retries after losing a race to a run that then ended (or started) before it could be read. */
const RACE_RETRIES = 10;

/**
 * Starts a run that has a dedupe or a debounce key (store/keyed-starts.ts): never through the
 * in-process fast path, the run goes through the claim like a delayed one. Returns the run the
 * caller gets — the new one, or the one its key led to — and how.
 */
export async function startKeyedRun(store: Store, run: NewRun): Promise<{ id: string; outcome: StartOutcome }> {
  refuseInDistributedMode(store, run.debounce ? 'debounce' : 'dedupeKey', `A start with ${run.debounce ? 'debounce' : 'a dedupeKey'}`);
  for (let attempt = 1; attempt <= RACE_RETRIES; attempt++) {
    if (run.debounce) {
      const r = await debounceStart(store, run, run.debounce);
      if (r) return { id: r.id, outcome: r.created ? 'started' : 'debounced' };
      continue; // a concurrent start created the pending run: join it
    }
    const key = run.dedupeKey!;
    if (await insertDeduped(store, run, key)) return { id: run.id, outcome: 'started' };
    const holder = await dedupeHolder(store, run, key);
    if (holder?.sameId) {
      if (holder.workflowName !== run.workflowName) throw new IdempotencyConflictError(run.id, holder.workflowName, run.workflowName);
      return { id: run.id, outcome: 'existing' };
    }
    if (holder) return { id: holder.id, outcome: 'deduplicated' };
    // the active run ended between the insert and the read: try again
  }
  throw new Error(`start(${run.workflowName}): lost the race for its dedupe/debounce key ${RACE_RETRIES} times in a row; try again.`);
}
