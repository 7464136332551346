import { checkIdentifierCharacters, showIdentifier } from '../config/identifiers.js';
import { DAY_MS, MAX_ID_LENGTH } from '../config/limits.js';
import { IdempotencyConflictError, InvalidArgumentError, UnsupportedDatabaseError } from '../errors/index.js';
import { debounceStart, dedupeHolder, insertDeduped, keyPartition } from '../store/keyed-starts.js';
import { partitionOf } from '../store/partitions.js';
import type { DebounceStart, NewRun } from '../store/rows.js';
import { idInPartition, type Store } from '../store/store.js';
import type { StartOptions, StartOutcome } from './start-options.js';

const DEBOUNCE_KEYS = ['key', 'periodMs', 'maxDelayMs', 'input'];
const show = showIdentifier;
const isKey = (v: unknown): v is string => typeof v === 'string' && v.length > 0 && v.length <= MAX_ID_LENGTH;
const isMs = (v: unknown) => typeof v === 'number' && Number.isInteger(v) && v >= 1 && v <= DAY_MS;

/**
 * Marks a keyed run whose id the engine minted (no id option): in distributed mode startKeyedRun may
 * mint it again, in its key's partition. A symbol, so it never reaches a statement or JSON.
 */
const MINTED_ID: unique symbol = Symbol('durable.keyed-run.minted-id');

/** The start options dedupeKey and debounce, checked (InvalidArgumentError listing every problem). */
export function keyedStart(opts: StartOptions): { dedupeKey?: string; debounce?: DebounceStart; [MINTED_ID]?: true } {
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
  return {
    ...(opts.dedupeKey !== undefined && { dedupeKey: opts.dedupeKey }),
    ...(debounce && { debounce }),
    ...((opts.dedupeKey !== undefined || debounce) && opts.id === undefined && { [MINTED_ID]: true as const }),
  };
}

/**
 * Distributed mode: a keyed run lives in its key's partition (its unique index holds per partition),
 * and a run's partition is a function of its id, so the engine mints the id of such a run until it
 * lands there (on average as many tries as there are partitions, of an MD5 each). An id of the
 * caller's own that lands elsewhere is refused before anything is written.
 */
function placeKeyedRun(store: Store, run: NewRun): void {
  const count = store.layout.partitions;
  if (count === null) return;
  const key = run.debounce?.key ?? run.dedupeKey!;
  const home = keyPartition(run.workflowName, key, count);
  if (partitionOf(run.id, count) === home) return;
  if (!(run as { [MINTED_ID]?: true })[MINTED_ID]) {
    throw new UnsupportedDatabaseError(
      'dedupeKey',
      `run id ${run.id} would not be in the partition of its dedupeKey ${key}, where distributed mode (Citus) keeps the runs of a key: ` +
        'leave the id to the engine (no id option), or run on a single PostgreSQL server to choose ids of your own. See docs/scaling-out.md.',
    );
  }
  run.id = idInPartition(home, count);
}

/** How many times a start retries after losing a race to a run that then ended (or started) before it could be read. */
const RACE_RETRIES = 10;

/**
 * Starts a run that has a dedupe or a debounce key (store/keyed-starts.ts): never through the
 * in-process fast path, the run goes through the claim like a delayed one. Returns the run the
 * caller gets — the new one, or the one its key led to — and how. In distributed mode the run is
 * placed in its key's partition first (placeKeyedRun: its id may change).
 */
export async function startKeyedRun(store: Store, run: NewRun): Promise<{ id: string; outcome: StartOutcome }> {
  placeKeyedRun(store, run);
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
