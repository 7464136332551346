import { parseArgs } from 'node:util';
import pg from 'pg';
import { MAX_PARTITIONS } from '../store/partitions.js';
import { distribute, distributionStatements } from '../store/distribution.js';
import { pgConfigFromUrl } from '../store/pool.js';
import { pgSqlClient } from '../store/sql-client.js';
import { isPostgresUrl } from '../store/postgres-hosts.js';
import type { CliIo } from './cli-io.js';
import { EXIT, reportFailure } from './cli-errors.js';
import { safeText } from './safe-text.js';

export const DISTRIBUTE_USAGE = `Usage: npx nestjs-durable distribute --partitions <n> [--print]     (DATABASE_URL, or --database-url)

Sets up distributed mode on a Citus cluster (DATABASE_URL names the coordinator): the runs are spread
over <n> partitions, each a schema of its own (durable_p0, durable_p1, …) that Citus keeps on one
worker node; the shared tables (schedules, queue limits) become reference tables. Run it once, after
the migration that created the nestjs-durable tables, with the app's workers stopped: runs already
in the tables (a database that was a single server) move to their partitions. Running it again
changes nothing; the number of partitions cannot change afterwards. Engines read it when they start.

Options:
  --partitions <n>        how many partitions (1 to ${MAX_PARTITIONS}); more than the most worker nodes you
                          expect to run, e.g. 32: a partition is the unit Citus moves between nodes
  --print                 print the SQL instead of running it (to run it yourself, e.g. in a migration)
  --database-url <url>    instead of DATABASE_URL
  --verbose               print the stack of an error
  -h, --help              this text

Exit codes: 0 done; 1 refused (Citus missing, another partition count already set up, unfinished runs
of a dedupe or debounce key); 2 bad command line; 3 database unreachable or without the nestjs-durable
tables.`;

/** `npx nestjs-durable distribute …`: returns the exit code. */
export async function runDistributeCommand(argv: string[], io: CliIo, env: NodeJS.ProcessEnv = process.env): Promise<number> {
  let values;
  try {
    ({ values } = parseArgs({
      args: argv,
      options: {
        partitions: { type: 'string' },
        print: { type: 'boolean' },
        'database-url': { type: 'string' },
        verbose: { type: 'boolean' },
        help: { type: 'boolean', short: 'h' },
      },
    }));
  } catch (e) {
    io.err(`nestjs-durable: ${safeText((e as Error).message)}\n\n${DISTRIBUTE_USAGE}`);
    return EXIT.usage;
  }
  if (values.help) {
    io.out(DISTRIBUTE_USAGE);
    return EXIT.ok;
  }
  const usage = (why: string) => (io.err(`nestjs-durable: ${why}\n\n${DISTRIBUTE_USAGE}`), EXIT.usage);
  const partitions = Number(values.partitions);
  if (values.partitions === undefined || !/^\d+$/.test(values.partitions) || partitions < 1 || partitions > MAX_PARTITIONS)
    return usage(`--partitions must be a whole number from 1 to ${MAX_PARTITIONS}, e.g. --partitions 32`);
  if (values.print) {
    io.out(
      distributionStatements(partitions)
        .map((s) => `${s};`)
        .join('\n'),
    );
    return EXIT.ok;
  }
  const url = values['database-url'] ?? env.DATABASE_URL;
  if (!url) return usage('set DATABASE_URL (or pass --database-url) to the Citus coordinator');
  if (!isPostgresUrl(url))
    return usage('distributed mode needs Citus, a PostgreSQL extension: DATABASE_URL must be a postgresql:// URL of the coordinator');
  // One connection (the move is one transaction), with the app's settings (a ?schema= becomes its search_path).
  const { Client = pg.Client, ...config } = pgConfigFromUrl(url);
  const client = new Client(config);
  client.on('error', () => {});
  try {
    const t0 = Date.now();
    await client.connect();
    await distribute(pgSqlClient(client, { prepared: false }), partitions, (line) => io.err(line));
    io.out(`Distributed mode set up: ${partitions} partition(s) (${((Date.now() - t0) / 1000).toFixed(1)} s). Start the app's workers.`);
    return EXIT.ok;
  } catch (e) {
    const message = (e as Error).message ?? '';
    if (/citus extension is not installed|count cannot change|debounce key are unfinished/.test(message)) {
      io.err(`nestjs-durable: ${safeText(message)}`);
      return EXIT.refused;
    }
    return reportFailure(e, { url, verbose: values.verbose, err: io.err });
  } finally {
    await client.end().catch(() => {});
  }
}
