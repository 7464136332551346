import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { errorText } from '../errors/error-text.js';
import { verifyReportText, type VerifyOptions, type VerifyReport } from '../engine/verify.js';
import type { CliIo } from './cli-io.js';
import { describeFailure, EXIT } from './cli-errors.js';
import { safeText } from './safe-text.js';

export const VERIFY_USAGE = `Usage: npx nestjs-durable verify --module <file> [--export <name>] [--call <method>]
                                [--finished-within <duration>] [--workflow <name>]... [--page-size <n>] [--json]

Before a deploy: replays every unfinished run in the database (DATABASE_URL, or the connection the
app gives DurableModule) against the workflows of this build, and lists the runs it would fail.
It boots the app's root module with DurableModule in verify mode: workflows are registered, no
worker, scheduler or schedule sync starts, no step body runs, and every read happens inside one
READ ONLY transaction that is rolled back.

Options:
  --module <file>               the compiled root module, e.g. dist/app.module.js (relative to the current folder)
  --export <name>               what the file exports for the root module (default AppModule, or its only
                                module-like export): a module class, a dynamic module (AppModule.forRoot()),
                                or a function returning one (called with no arguments)
  --call <method>               call this static method of the export, e.g. --call forRoot; without it a class
                                that does not import DurableModule itself but has a static forRoot() is booted
                                as AppModule.forRoot()
  --finished-within <duration>  also replay runs that finished within this long, e.g. 30m, 24h, 7d
  --workflow <name>             only this workflow (repeatable)
  --page-size <n>               runs read and replayed at a time (default 500)
  --json                        print the report as JSON
  --verbose                     print the stack of an error
  -h, --help                    this text

Exit codes: 0 no run would fail; 1 some would (listed); 2 bad command line, or the app did not boot;
3 database unreachable, login refused or without the nestjs-durable tables.`;

/** The part of the package's public API the command uses (loaded by name: the app's own module imports the same copy). */
interface PackageApi {
  verifyApp(appModule: unknown, opts: VerifyOptions & { logger?: unknown }): Promise<VerifyReport>;
}

/** `npx nestjs-durable verify …`: returns the exit code. */
export async function runVerifyCommand(argv: string[], io: CliIo): Promise<number> {
  let args;
  try {
    args = parseArgs({
      args: argv,
      options: {
        module: { type: 'string' },
        export: { type: 'string' },
        call: { type: 'string' },
        verbose: { type: 'boolean' },
        'finished-within': { type: 'string' },
        workflow: { type: 'string', multiple: true },
        'page-size': { type: 'string' },
        json: { type: 'boolean' },
        help: { type: 'boolean', short: 'h' },
      },
    }).values;
    if (args.help) return (io.out(VERIFY_USAGE), 0);
    if (!args.module) throw new Error('--module is required: the compiled root module of the app, e.g. --module dist/app.module.js');
  } catch (e) {
    io.err(`nestjs-durable verify: ${(e as Error).message}\n\n${VERIFY_USAGE}`);
    return 2;
  }
  let opts: VerifyOptions;
  let appModule: unknown;
  try {
    opts = {
      finishedWithinMs: args['finished-within'] === undefined ? null : duration(args['finished-within']),
      workflows: args.workflow,
      pageSize: args['page-size'] === undefined ? undefined : Number(args['page-size']),
    };
    appModule = await loadModule(resolve(io.cwd, args.module), args.export, args.call);
  } catch (e) {
    return failed(e, io, args.verbose);
  }
  let lastProgress = 0;
  opts.onProgress = (p) => {
    if (args.json || p.elapsedMs - lastProgress < 1000) return;
    lastProgress = p.elapsedMs;
    io.err(`verify: ${p.checked} run(s) checked, ${p.failed} would fail (${(p.elapsedMs / 1000).toFixed(1)} s)`);
  };
  let report: VerifyReport;
  try {
    const SELF = 'nestjs-durable';
    const api = (await import(SELF)) as PackageApi;
    report = await api.verifyApp(appModule, { ...opts, logger: ['error', 'warn'] });
  } catch (e) {
    return failed(e, io, args.verbose);
  }
  io.out(args.json ? JSON.stringify(report, null, 2) : verifyReportText(report));
  return report.ok ? 0 : 1;
}

/**
 * An error before the report: the database's (exit 3, one line saying what to do), or the app's
 * module that did not load or boot (exit 2).
 */
function failed(e: unknown, io: CliIo, verbose: boolean | undefined): number {
  const { code, line } = describeFailure(e, process.env.DATABASE_URL);
  io.err(`nestjs-durable verify: ${safeText(code === EXIT.database ? line : errorText(e))}`);
  if (verbose)
    io.err(
      String((e as Error)?.stack ?? '')
        .split('\n')
        .map(safeText)
        .join('\n'),
    );
  return code === EXIT.database ? EXIT.database : EXIT.usage;
}

const isClass = (v: unknown) => typeof v === 'function' && /^class[\s{]/.test(Function.prototype.toString.call(v));
const isDynamicModule = (v: unknown) => !!v && typeof v === 'object' && typeof (v as { module?: unknown }).module === 'function';
const moduleLike = (v: unknown) => typeof v === 'function' || isDynamicModule(v) || v instanceof Promise;

/**
 * The app's root module from a compiled file: an exported module class (booted as it is, or through
 * its static forRoot() — see verifyApp), a dynamic module, or a factory function returning one.
 */
export async function loadModule(file: string, name: string | undefined, call: string | undefined): Promise<unknown> {
  const mod = (await import(pathToFileURL(file).href)) as Record<string, unknown>;
  const exports = () => Object.keys(mod).join(', ') || 'none';
  let chosen: unknown;
  let chosenName: string;
  if (name) {
    if (!moduleLike(mod[name]))
      throw new Error(`${file} exports no module "${name}" (a class, a dynamic module or a function returning one; exports: ${exports()})`);
    [chosen, chosenName] = [mod[name], name];
  } else if (mod.AppModule !== undefined) {
    [chosen, chosenName] = [mod.AppModule, 'AppModule'];
  } else {
    const candidates = Object.entries(mod).filter(([, v]) => moduleLike(v));
    if (candidates.length !== 1) throw new Error(`${file}: name the root module with --export (exports: ${exports()})`);
    [chosenName, chosen] = candidates[0];
  }
  if (call) {
    const method = (chosen as Record<string, unknown> | null)?.[call];
    if (typeof method !== 'function') throw new Error(`${chosenName} has no static method "${call}" to call (--call)`);
    return await method.call(chosen);
  }
  // A factory (a plain or arrow function, not a class) builds the module: call it as the app's main.ts would.
  if (typeof chosen === 'function' && !isClass(chosen)) return await chosen();
  return await chosen;
}

const UNITS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/** "30m", "24h", "7d", "500ms" or plain ms → ms. */
export function duration(text: string, option = '--finished-within'): number {
  const m = /^(\d+(?:\.\d+)?)(ms|s|m|h|d)?$/.exec(text.trim());
  if (!m) throw new Error(`${option}: "${text}" is not a duration (e.g. 30m, 24h, 7d)`);
  return Math.round(Number(m[1]) * UNITS[m[2] ?? 'ms']);
}
