import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { applyChanges } from './file-change.js';
import { InitError } from './init-error.js';
import { initReport } from './init-report.js';
import { planInit } from './init.js';
import type { CliIo } from './cli-io.js';

export const USAGE = `Usage: npx nestjs-durable init [--upgrade] [--dry-run] [--schema <path>] [--config <file>]
       npx nestjs-durable verify --module <file> [options]   (before a deploy; see verify --help)
       npx nestjs-durable runs list|show|export|cancel|resume|retry|fork|delete …   (runs --help)
       npx nestjs-durable schedules list|show|create|update|delete|pause|resume|trigger …   (schedules --help)
       npx nestjs-durable backfills list|pause|resume …   (backfills --help)
       npx nestjs-durable distribute --partitions <n> [--print]   (Citus: distributed mode; distribute --help)

Adds the tables of nestjs-durable to the Prisma schema of the app in the current folder:
  - a single schema file becomes a schema folder (its own folder; prisma.config.ts points at it),
  - durable.prisma is copied from the package into that folder,
  - the prisma-client (or prisma-client-js) generator gets previewFeatures = ["partialIndexes"],
then it prints the commands that create the tables. A second run changes nothing.

Options:
  --upgrade        replace the app's durable.prisma with this release's (after upgrading the package)
  --dry-run        print the changes without writing them
  --schema <path>  the schema file or folder, when init does not find it
  --config <file>  the Prisma config file, when it is not prisma.config.ts (or another default name)
  -h, --help       this text
  -v, --version    the version of nestjs-durable

Exit codes: 0 done or nothing to do; 1 refused, nothing written (the message says what to do); 2 bad command line.
Apps with their own SQL migrations: node_modules/nestjs-durable/prisma/schema.sql instead.`;

/** `npx nestjs-durable init …` (and the bare command's --help / --version); returns the exit code. */
export function runInit(argv: string[], io: CliIo): number {
  try {
    const { values, positionals } = parse(argv);
    if (values.help) return (io.out(USAGE), 0);
    if (values.version) return (io.out(packageVersion()), 0);
    const [command, ...extra] = positionals;
    if (command !== 'init' || extra.length) {
      throw new InitError('USAGE', command ? `Unknown command "${[command, ...extra].join(' ')}".\n\n${USAGE}` : USAGE, 2);
    }
    const plan = planInit({ cwd: io.cwd, upgrade: values.upgrade, schema: values.schema, config: values.config });
    if (!values['dry-run']) applyChanges(plan.changes);
    io.out(initReport(plan, values['dry-run'] ?? false));
    return 0;
  } catch (e) {
    if (!(e instanceof InitError)) throw e;
    io.err(`nestjs-durable: ${e.message}`);
    return e.exitCode;
  }
}

function parse(argv: string[]) {
  try {
    return parseArgs({
      args: argv,
      allowPositionals: true,
      options: {
        upgrade: { type: 'boolean' },
        'dry-run': { type: 'boolean' },
        schema: { type: 'string' },
        config: { type: 'string' },
        help: { type: 'boolean', short: 'h' },
        version: { type: 'boolean', short: 'v' },
      },
    });
  } catch (e) {
    throw new InitError('USAGE', `${(e as Error).message}\n\n${USAGE}`, 2);
  }
}

function packageVersion(): string {
  const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8'));
  return String(pkg.version);
}
