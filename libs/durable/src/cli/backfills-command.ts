import { parseArgs } from 'node:util';
import { WorkflowRegistry } from '../definitions/registry.js';
import type { BackfillView } from '../engine/backfills.js';
import { DurableEngine } from '../engine/durable-engine.js';
import type { CliIo } from './cli-io.js';
import { EXIT, reportFailure } from './cli-errors.js';
import { table, time } from './runs-format.js';
import { safeJson, safeText } from './safe-text.js';
import { readLayout } from '../engine/distributed-mode.js';

export const BACKFILLS_USAGE = `Usage: npx nestjs-durable backfills <command> [options]     (DATABASE_URL, or --database-url)

Backfills (runs whose workflow calls Durable.backfill) in the app's database; no app needs to run.
  backfills list    [--limit N]       newest first: status, rows done / estimated, rate, time left
  backfills pause   <run id>          after its current batch; it waits without a worker slot
  backfills resume  <run id>          goes on where it stopped, on any instance
Cancel one like any run: npx nestjs-durable runs cancel <run id>.
--json prints JSON; --verbose adds the stack to an error.
Exit codes: 0 done; 1 refused (the message says why); 2 bad command line; 3 database unreachable,
login refused or without the nestjs-durable tables; 4 unexpected error.`;

const COMMANDS = ['list', 'pause', 'resume'];

/** `nestjs-durable backfills …`; returns the exit code. */
export async function runBackfillsCommand(argv: string[], io: CliIo, env: NodeJS.ProcessEnv = process.env): Promise<number> {
  const usage = (why: string) => (io.err(`nestjs-durable: ${safeText(why)}\n\n${BACKFILLS_USAGE}`), EXIT.usage);
  let parsed;
  try {
    parsed = parseArgs({
      args: argv,
      allowPositionals: true,
      options: {
        limit: { type: 'string' },
        json: { type: 'boolean' },
        'database-url': { type: 'string' },
        verbose: { type: 'boolean' },
        help: { type: 'boolean', short: 'h' },
      },
    });
  } catch (e) {
    return usage((e as Error).message);
  }
  const { values, positionals } = parsed;
  if (values.help) return (io.out(BACKFILLS_USAGE), EXIT.ok);
  const [command, id, ...extra] = positionals;
  if (!command) return (io.err(BACKFILLS_USAGE), EXIT.usage);
  if (!COMMANDS.includes(command)) return usage(`unknown command "backfills ${command}"`);
  if (extra.length) return usage(`unexpected "${extra.join(' ')}"`);
  if (command === 'list' ? id : !id)
    return usage(command === 'list' ? '"backfills list" takes no id' : `"backfills ${command}" needs a run id`);
  const limit = values.limit === undefined ? 50 : Number(values.limit);
  if (!Number.isInteger(limit) || limit < 1 || limit > 1000) return usage('--limit must be an integer from 1 to 1000');
  const url = values['database-url'] ?? env.DATABASE_URL;
  if (!url) return usage('set DATABASE_URL (or pass --database-url) to the database the app uses');

  const engine = new DurableEngine({
    registry: new WorkflowRegistry(),
    connection: url,
    poolSize: 2,
    options: { worker: false, schedules: false },
  });
  const print = (json: unknown, text: string) => io.out(values.json ? safeJson(json) : text);
  try {
    await readLayout(engine.storeForTools);
    if (command === 'list') {
      const list = await engine.backfills({ limit });
      print(list, formatBackfills(list));
    } else if (command === 'pause') {
      await engine.pauseBackfill(id);
      print({ id, paused: true }, `Backfill ${safeText(id)}: pauses after its current batch.`);
    } else {
      await engine.resumeBackfill(id);
      print({ id, paused: false }, `Backfill ${safeText(id)}: goes on.`);
    }
    return EXIT.ok;
  } catch (e) {
    return reportFailure(e, { url, verbose: values.verbose, err: io.err });
  } finally {
    await engine.stop().catch(() => undefined);
  }
}

/** The list as a table: run, workflow, status (paused), rows done / estimated, rate, time left. */
export function formatBackfills(list: BackfillView[]): string {
  if (!list.length) return 'No backfills.';
  const rows = [['RUN', 'WORKFLOW', 'STATUS', 'ROWS', 'RATE', 'LEFT', 'REPORTED']];
  for (const b of list) {
    rows.push([
      safeText(b.runId),
      safeText(b.workflowName),
      b.paused ? 'PAUSED' : `${b.status}${b.dryRun ? ' (dry run)' : ''}`,
      `${b.done}${b.estimated === null ? '' : ` / ${b.estimated}`}`,
      b.rowsPerSecond === null ? '—' : `${b.rowsPerSecond}/s`,
      b.etaSeconds === null ? '—' : `${b.etaSeconds} s`,
      time(b.reportedAt.toISOString()),
    ]);
  }
  return table(rows);
}
