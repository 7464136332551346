import { randomUUID } from 'node:crypto';
import { InvalidArgumentError } from '../errors/index.js';
import { checkIdentifierCharacters, forbiddenCharacter, IDENTIFIER_CHARACTERS, showIdentifier } from '../config/identifiers.js';
import { CENTURY_MS, MAX_ID_LENGTH, MAX_NAME_LENGTH, MAX_PRIORITY, MAX_TAG_LENGTH, MAX_TAGS } from '../config/limits.js';
import { errorText } from '../errors/error-text.js';
import type { NewRun } from '../store/rows.js';
import { encode } from '../codec/codec.js';
import type { ResolvedEngineOptions } from '../config/options.js';
import type { WorkflowRegistry } from '../definitions/registry.js';
import type { WorkflowDefinition } from '../definitions/definitions.js';
import { keyedStart } from './keyed-start.js';
import type { StartOptions } from './start-options.js';

/** The start types live in start-options.ts (keyed-start.ts needs them without this file); re-exported for existing importers. */
export type { DebounceOptions, StartOptions, StartOutcome } from './start-options.js';

/**
 * Validates a start request and builds the row to insert: the workflow must be registered, ids,
 * numbers and dates in range, the input storable (lossless JSON within maxPayloadBytes).
 */
export function buildNewRun(
  registry: WorkflowRegistry,
  options: ResolvedEngineOptions,
  workflowName: string,
  input: unknown,
  opts: StartOptions,
): NewRun {
  if (typeof workflowName !== 'string') throw new InvalidArgumentError('The workflow name must be a string.');
  checkIdentifierCharacters('start()', 'workflow name', workflowName);
  const def = registry.get(workflowName);
  const id = opts.id ?? randomUUID();
  if (typeof id !== 'string' || !id.length || id.length > MAX_ID_LENGTH) {
    throw new InvalidArgumentError(
      `Run id must be a non-empty string of at most ${MAX_ID_LENGTH} characters (got ${showIdentifier(id)}).`,
      'id',
    );
  }
  checkIdentifierCharacters('start()', 'id', id);
  const timeoutMs = opts.timeoutMs === undefined ? (def.options.timeoutMs ?? null) : opts.timeoutMs;
  // Beyond a century the database cannot store some of the times (or they make no sense).
  checkNumber('timeoutMs', timeoutMs, 1, CENTURY_MS);
  checkNumber('delayMs', opts.delayMs ?? null, 0, CENTURY_MS);
  const priority = opts.priority ?? def.options.priority ?? 0;
  if (typeof priority !== 'number' || !Number.isInteger(priority) || priority < -MAX_PRIORITY || priority > MAX_PRIORITY) {
    throw new InvalidArgumentError(
      `priority must be an integer between -${MAX_PRIORITY} and ${MAX_PRIORITY} (lower runs first; got ${showIdentifier(priority)}).`,
    );
  }
  if (opts.runAt !== undefined && !(opts.runAt instanceof Date && Math.abs(opts.runAt.getTime() - Date.now()) <= CENTURY_MS)) {
    throw new InvalidArgumentError(`runAt must be a valid Date within a century of now (got ${showIdentifier(opts.runAt)}).`);
  }
  if (opts.queue !== undefined) {
    if (typeof opts.queue !== 'string' || !opts.queue || opts.queue.length > MAX_NAME_LENGTH) {
      throw new InvalidArgumentError(
        `queue must be a non-empty string of at most ${MAX_NAME_LENGTH} characters (got ${showIdentifier(opts.queue)}).`,
        'queue',
      );
    }
    checkIdentifierCharacters('start()', 'queue', opts.queue);
  }
  return {
    id,
    concurrencyKey: concurrencyKeyOf(def, input, opts),
    workflowName: def.name,
    queue: opts.queue ?? def.queue,
    input: encode(input, { where: `input of workflow "${def.name}"`, maxBytes: options.maxPayloadBytes }),
    priority,
    runAt: opts.runAt ?? null,
    delayMs: opts.delayMs ?? null,
    timeoutMs,
    parentId: null,
    appVersion: options.appVersion,
    tags: checkTags(opts.tags),
    ...keyedStart(opts),
  };
}
/** The start option, else the workflow's concurrencyKey(input); a non-empty string of at most MAX_ID_LENGTH, or null. */
function concurrencyKeyOf(def: WorkflowDefinition, input: unknown, opts: StartOptions): string | null {
  let key: unknown = opts.concurrencyKey;
  let from = 'the start option concurrencyKey';
  if (key === undefined && def.options.concurrencyKey) {
    from = `concurrencyKey(input) of workflow "${def.name}"`;
    try {
      key = def.options.concurrencyKey(input);
    } catch (err) {
      throw new InvalidArgumentError(`${from} threw: ${errorText(err)}. It must return a string (or null for no key).`, 'concurrencyKey');
    }
  }
  if (key === undefined || key === null) return null;
  if (typeof key !== 'string' || !key || key.length > MAX_ID_LENGTH) {
    throw new InvalidArgumentError(
      `${from} must be a non-empty string of at most ${MAX_ID_LENGTH} characters, or null for no key (got ${showIdentifier(key)}).`,
      'concurrencyKey',
    );
  }
  return key;
}

/**

/** The start option `tags`: at most MAX_TAGS distinct non-empty strings without NUL, each at most MAX_TAG_LENGTH long. */
export function checkTags(tags: unknown): string[] {
  if (tags === undefined || tags === null) return [];
  const bad = (why: string) =>
    new InvalidArgumentError(
      `tags ${why}: pass an array of at most ${MAX_TAGS} strings of 1 to ${MAX_TAG_LENGTH} characters, e.g. { tags: ['customer:acme'] } (got ${showIdentifier(tags)}).`,
      'tags',
    );
  if (!Array.isArray(tags)) throw bad('must be an array');
  if (tags.length > MAX_TAGS) throw bad(`has ${tags.length} entries`);
  for (const t of tags) {
    if (typeof t !== 'string' || !t.length || t.length > MAX_TAG_LENGTH) throw bad('has an entry that is not a string of the right length');
    const c = forbiddenCharacter(t);
    if (c) throw bad(`has an entry with a ${c.startsWith('U+0000 ') ? 'NUL' : 'control'} character (${c}; use ${IDENTIFIER_CHARACTERS})`);
  }
  return [...new Set(tags as string[])];
}
function checkNumber(name: string, v: number | null, min: number, max = Number.MAX_SAFE_INTEGER): void {
  if (v === null) return;
  if (typeof v !== 'number' || !Number.isFinite(v) || v < min || v > max) {
    throw new InvalidArgumentError(`${name} must be a number between ${min} and ${max} (got ${showIdentifier(v)}).`);
  }
}
