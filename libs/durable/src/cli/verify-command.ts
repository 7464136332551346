import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { errorText } from '../errors/error-text.js';
import { verifyReportText, type VerifyOptions, type VerifyReport } from '../engine/verify.js';
import type { CliIo } from './cli-io.js';

export const VERIFY_USAGE = `Usage: npx nestjs-durable verify --module <file> [--export <name>] [--finished-within <duration>]
                                [--workflow <name>]... [--page-size <n>] [--json]

Before a deploy: replays every unfinished run in the database (DATABASE_URL, or the connection the
app gives DurableModule) against the workflows of this build, and lists the runs it would fail.
It boots the app's root module with DurableModule in verify mode: workflows are registered, no
worker, scheduler or schedule sync starts, no step body runs, and every read happens inside one
READ ONLY transaction that is rolled back.

Options:
  --module <file>               the compiled root module, e.g. dist/app.module.js (relative to the current folder)
  --export <name>               its exported class (default AppModule, or the module's only export)
  --finished-within <duration>  also replay runs that finished within this long, e.g. 30m, 24h, 7d
  --workflow <name>             only this workflow (repeatable)
  --page-size <n>               runs read and replayed at a time (default 500)
  --json                        print the report as JSON
  -h, --help                    this text

Exit codes: 0 no run would fail; 1 some would (listed); 2 bad command line, or the app did not boot.`;

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
    appModule = await loadModule(resolve(io.cwd, args.module), args.export);
  } catch (e) {
    io.err(`nestjs-durable verify: ${errorText(e)}`);
    return 2;
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
    io.err(`nestjs-durable verify: ${errorText(e)}`);
    return 2;
  }
  io.out(args.json ? JSON.stringify(report, null, 2) : verifyReportText(report));
  return report.ok ? 0 : 1;
}

/** The app's root module class from a compiled file. */
async function loadModule(file: string, name: string | undefined): Promise<unknown> {
  const mod = (await import(pathToFileURL(file).href)) as Record<string, unknown>;
  if (name) {
    if (typeof mod[name] !== 'function')
      throw new Error(`${file} exports no class "${name}" (exports: ${Object.keys(mod).join(', ') || 'none'})`);
    return mod[name];
  }
  if (typeof mod.AppModule === 'function') return mod.AppModule;
  const classes = Object.entries(mod).filter(([, v]) => typeof v === 'function');
  if (classes.length === 1) return classes[0][1];
  throw new Error(`${file}: name the root module with --export (exports: ${Object.keys(mod).join(', ') || 'none'})`);
}

const UNITS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/** "30m", "24h", "7d", "500ms" or plain ms → ms. */
export function duration(text: string): number {
  const m = /^(\d+(?:\.\d+)?)(ms|s|m|h|d)?$/.exec(text.trim());
  if (!m) throw new Error(`--finished-within: "${text}" is not a duration (e.g. 30m, 24h, 7d)`);
  return Math.round(Number(m[1]) * UNITS[m[2] ?? 'ms']);
}
