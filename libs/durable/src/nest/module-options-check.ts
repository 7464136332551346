import { ENGINE_OPTION_KEYS, throwIfUnknownOptions, unknownOptionProblems, type OptionLevel } from '../config/unknown-options.js';
import type { EngineOptions } from '../config/options.js';
import type { DurableModuleOptions } from './module-definition.js';

/** The keys DurableModuleOptions adds to the engine's options (kept complete by the compiler). */
const MODULE: Record<Exclude<keyof DurableModuleOptions, keyof EngineOptions>, true> = {
  prisma: true,
  connection: true,
  poolSize: true,
  preparedStatements: true,
  logging: true,
};
/** forRoot()'s extras (consumed by the module builder, not part of the options the engine gets). */
const EXTRAS = ['isGlobal', 'admin', 'signals', 'signalPath', 'callbackPath'];

/** What else people write, and where it belongs in the module's options. */
const ELSEWHERE: Record<string, string> = {
  options: 'DurableModule takes the engine options at the top level: write `worker: false`, not `options: { worker: false }`',
  logger: "DurableModule logs through Nest's Logger: use `logging: false` to silence it, `logLevel` to filter it",
  registry: 'DurableModule finds its workflows itself (@Workflow() methods of providers): it takes no registry',
};

/**
 * DurableModule.forRoot() / forRootAsync() options: an unknown or misplaced key is an
 * InvalidOptionsError naming it and what to write instead (a typo: the nearest option).
 * `extras`: the object given to forRoot() (it may also hold isGlobal and admin).
 */
export function checkModuleOptions(options: unknown, extras: boolean): void {
  if (!options || typeof options !== 'object') return;
  const keys = [...ENGINE_OPTION_KEYS.filter((k) => k !== 'logger'), ...Object.keys(MODULE), ...(extras ? EXTRAS : [])];
  const level: OptionLevel = { prefix: '', where: 'in DurableModule options', keys };
  const problems: string[] = [];
  const rest: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(options)) {
    if (Object.hasOwn(ELSEWHERE, k) && !keys.includes(k)) problems.push(`unknown option \`${k}\`: ${ELSEWHERE[k]}`);
    else rest[k] = v;
  }
  problems.push(...unknownOptionProblems(rest, level, []));
  throwIfUnknownOptions(extras ? 'DurableModule.forRoot()' : 'DurableModule options', problems);
}
