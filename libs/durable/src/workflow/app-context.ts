/**
 * The app's context of a run (engine option `context`): restored around each execution, read by
 * Durable.context(), and turned into SET LOCAL settings for transactional steps.
 */
import { InvalidOptionsError } from '../errors/index.js';
import { errorText } from '../errors/error-text.js';
import type { RunContext } from './run-context.js';

/** A setting name set_config() accepts: `app.tenant_id`, `role`… (identifiers joined by dots). */
const SETTING_NAME = /^[A-Za-z_][A-Za-z0-9_$]*(\.[A-Za-z_][A-Za-z0-9_$]*)*$/;

/**
 * Runs one execution of the run inside the option's `restore` (when the run has a context and the
 * option has restore). Rejects when restore throws before calling `execution` or never calls it.
 */
export function withinAppContext<T>(ctx: RunContext, execution: () => Promise<T>): Promise<T> {
  const restore = ctx.services.options.context?.restore;
  // Without a context, the execution as it is (not wrapped in a promise of its own: one per run).
  if (ctx.appContext === undefined || !restore) return execution();
  return restored(ctx.appContext, restore, execution);
}

async function restored<T>(
  appContext: unknown,
  restore: (context: unknown, run: () => Promise<unknown>) => unknown,
  execution: () => Promise<T>,
): Promise<T> {
  let running: Promise<T> | null = null;
  await restore(appContext, () => {
    if (running) throw new InvalidOptionsError('context.restore called its run() twice; call it once and return what it returns.');
    running = execution();
    return running;
  });
  if (!running) throw new InvalidOptionsError('context.restore returned without calling run(); call it once and return what it returns.');
  // The execution itself, even when restore did not return (or await) what run() returned.
  return await (running as Promise<T>);
}

/**
 * The settings a transactional step of this execution applies (option `context.settings` of the
 * run's context), checked once per execution; null when there are none.
 */
export function transactionSettings(ctx: RunContext): { names: string[]; values: string[] } | null {
  if (ctx.appSettings !== undefined) return ctx.appSettings;
  const settings = ctx.services.options.context?.settings;
  if (!settings || ctx.appContext === undefined) return (ctx.appSettings = null);
  let got: unknown;
  try {
    got = settings(ctx.appContext);
  } catch (err) {
    throw new InvalidOptionsError(`context.settings threw for run ${ctx.runId}: ${errorText(err)}`);
  }
  if (typeof got !== 'object' || got === null || Array.isArray(got)) {
    throw new InvalidOptionsError(`context.settings must return an object of setting names to strings, e.g. { 'app.tenant_id': 'acme' }.`);
  }
  const names: string[] = [];
  const values: string[] = [];
  for (const [name, value] of Object.entries(got)) {
    if (!SETTING_NAME.test(name)) {
      throw new InvalidOptionsError(`context.settings returned the setting name ${JSON.stringify(name)}: use a name like 'app.tenant_id'.`);
    }
    if (typeof value !== 'string') {
      throw new InvalidOptionsError(
        `context.settings returned ${typeof value} for '${name}': every value must be a string (String(x) it).`,
      );
    }
    names.push(name);
    values.push(value);
  }
  return (ctx.appSettings = names.length ? { names, values } : null);
}
