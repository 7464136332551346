import { ENGINE_OPTION_KEYS, throwIfUnknownOptions, unknownOptionProblems, type OptionLevel } from '../config/unknown-options.js';
import type { DurableEngineConfig } from './engine-runtime.js';

/** Every top-level key of DurableEngineConfig (kept complete by the compiler). */
const CONFIG: Record<keyof DurableEngineConfig, true> = {
  registry: true,
  connection: true,
  poolSize: true,
  preparedStatements: true,
  prisma: true,
  options: true,
};

const TOP: OptionLevel = { prefix: '', where: 'at the top level', keys: Object.keys(CONFIG) };
const OPTIONS: OptionLevel = { prefix: 'options.', where: 'in options', keys: ENGINE_OPTION_KEYS };

/**
 * `new DurableEngine({...})`: an unknown or misplaced key is an InvalidOptionsError naming it and
 * where it belongs (`worker: false` at the top level is `options.worker`), never silently ignored.
 */
export function checkEngineConfig(config: DurableEngineConfig): void {
  if (!config || typeof config !== 'object') return;
  const problems = unknownOptionProblems(config, TOP, [OPTIONS]);
  const { options } = config;
  if (options && typeof options === 'object') problems.push(...unknownOptionProblems(options, OPTIONS, [TOP]));
  throwIfUnknownOptions('new DurableEngine()', problems);
}
