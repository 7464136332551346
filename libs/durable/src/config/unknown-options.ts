import { InvalidOptionsError } from '../errors/index.js';
import type { EngineOptions } from './options.js';

/**
 * Every key of EngineOptions (the Record makes the compiler keep this list complete): an option
 * object with any other key is refused, naming the key and where it belongs.
 */
const ENGINE_OPTIONS: Record<keyof EngineOptions, true> = {
  workerId: true,
  worker: true,
  concurrency: true,
  queues: true,
  leaseMs: true,
  heartbeatMs: true,
  pollIntervalMs: true,
  sweepIntervalMs: true,
  sweepBatchSize: true,
  shutdownGraceMs: true,
  retentionMs: true,
  maxPayloadBytes: true,
  appVersion: true,
  runVersions: true,
  stepRetries: true,
  maxRecoveryAttempts: true,
  inMemoryWaitMaxMs: true,
  suspendGraceMs: true,
  waitRecheckMs: true,
  cancelChildren: true,
  history: true,
  allowUntestedMysql: true,
  schedules: true,
  scheduleBatchSize: true,
  scheduleMisfireMs: true,
  logger: true,
  logLevel: true,
  telemetry: true,
  hooks: true,
  context: true,
  callbacks: true,
  signals: true,
};
export const ENGINE_OPTION_KEYS: readonly string[] = Object.keys(ENGINE_OPTIONS);

/** One level of an options object: its known keys, and where keys of other levels are spelled. */
export interface OptionLevel {
  /** How a key of this level is written in messages: `options.` for the engine's options, '' for the top. */
  prefix: string;
  /** Its place in words ("at the top level", "in options"). */
  where: string;
  keys: readonly string[];
}

/**
 * Problems of `given` (one level of an options object): each key this level does not have, with
 * where it belongs if another level has it (a misplaced key), or the nearest known key (a typo).
 */
export function unknownOptionProblems(given: object, level: OptionLevel, others: readonly OptionLevel[]): string[] {
  const problems: string[] = [];
  for (const key of Object.keys(given)) {
    if (level.keys.includes(key)) continue;
    const home = others.find((o) => o.keys.includes(key));
    const near = home ? `${home.prefix}${key}` : nearest(key, level.keys, level.prefix);
    problems.push(
      `unknown option \`${level.prefix}${key}\` ${level.where}${near ? `; did you mean \`${near}\`?` : ` (known: ${level.keys.join(', ')})`}`,
    );
  }
  return problems;
}

/** Throws InvalidOptionsError listing the problems (none: nothing happens). */
export function throwIfUnknownOptions(what: string, problems: string[]): void {
  if (problems.length) throw new InvalidOptionsError(`${what}: ${problems.join('; ')}.`);
}

/** The known key nearest to `key` (case-insensitive edit distance ≤ 2, or ≤ a third of its length), with its prefix. */
function nearest(key: string, known: readonly string[], prefix: string): string | null {
  let best: string | null = null;
  let bestDistance = Infinity;
  for (const k of known) {
    const d = distance(key.toLowerCase(), k.toLowerCase());
    if (d < bestDistance) {
      best = k;
      bestDistance = d;
    }
  }
  return best !== null && bestDistance <= Math.max(2, Math.floor(key.length / 3)) ? `${prefix}${best}` : null;
}

/** Damerau–Levenshtein distance (adjacent transpositions count as one edit: wroker → worker). */
function distance(a: string, b: string): number {
  const d: number[][] = Array.from({ length: a.length + 1 }, (_, i) => [i, ...new Array<number>(b.length).fill(0)]);
  for (let j = 1; j <= b.length; j++) d[0][j] = j;
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      d[i][j] = Math.min(d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) d[i][j] = Math.min(d[i][j], d[i - 2][j - 2] + 1);
    }
  }
  return d[a.length][b.length];
}
