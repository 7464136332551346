import { writeFileSync } from 'node:fs';
import { userInfo } from 'node:os';
import { resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { AdminService } from '../admin/admin-service.js';
import { parseBulkExecute, parseBulkPreview } from '../admin/bulk-params.js';
import { parseListQuery, runId } from '../admin/params.js';
import { WorkflowRegistry } from '../definitions/registry.js';
import { DurableEngine } from '../engine/durable-engine.js';
import { IllegalTransitionError } from '../errors/index.js';
import type { CliIo } from './cli-io.js';
import { CliRefusal, EXIT, reportFailure } from './cli-errors.js';
import { formatRun, formatRunList } from './runs-format.js';
import { isPostgresUrl } from '../store/postgres-hosts.js';
import { safeJson, safeText } from './safe-text.js';
import { readLayout } from '../engine/distributed-mode.js';

export const RUNS_USAGE = `Usage: npx nestjs-durable runs <command> [options]     (DATABASE_URL, or --database-url)

Works on the database directly: no app needs to run. Actions use the same statements as the app.
  runs list   [filters] [--limit N] [--sort created|updated] [--order desc|asc]
  runs show   <id>                          (an id, or the start of one that only one run has)
  runs export <id> [--out file]            (the run and its checkpoints as JSON: replayRun() in nestjs-durable/testing)
  runs cancel <id> [--compensate]          runs cancel --all [filters] [--compensate] [--yes]
  runs resume <id>                          runs resume --all [filters] [--yes]
  runs retry  <id>                          runs retry  --all [filters] [--yes]   (FAILED runs, from the failed step)
  runs fork   <id> --from-step N            (every step from N on runs again: effects happen twice)
  runs delete --all [filters] [--yes]       (finished runs, with their steps, messages, events, history)

Filters (as the admin API's): --status S[,S]  --workflow W  --queue Q  --tag T (repeat: all of them)
  --input '{"customer":"acme"}'  --id-prefix P  --parent ID  --created-from ISO  --created-to ISO
  --finished-from ISO  --finished-to ISO
--all without --yes is a dry run: it prints how many runs the action would change.
--json prints JSON (one document) instead of text; --verbose adds the stack to an error.
--read-url URL (or DURABLE_READ_REPLICA_URL): "runs list" reads from that read replica.
Exit codes: 0 done; 1 refused (the message says why); 2 bad command line; 3 database unreachable, login refused
or without the nestjs-durable tables; 4 unexpected error.`;

const FILTERS = {
  status: 'status',
  workflow: 'workflow',
  queue: 'queue',
  tag: 'tag',
  input: 'input',
  'id-prefix': 'idPrefix',
  parent: 'parentId',
  'created-from': 'createdFrom',
  'created-to': 'createdTo',
  'finished-from': 'finishedFrom',
  'finished-to': 'finishedTo',
} as const;

class UsageError extends Error {}

function parse(argv: string[]) {
  try {
    return parseArgs({
      args: argv,
      allowPositionals: true,
      options: {
        ...Object.fromEntries(Object.keys(FILTERS).map((k) => [k, { type: 'string' as const, multiple: true as const }])),
        limit: { type: 'string' },
        sort: { type: 'string' },
        order: { type: 'string' },
        all: { type: 'boolean' },
        yes: { type: 'boolean' },
        compensate: { type: 'boolean' },
        'from-step': { type: 'string' },
        'batch-size': { type: 'string' },
        json: { type: 'boolean' },
        out: { type: 'string' },
        'database-url': { type: 'string' },
        'read-url': { type: 'string' },
        verbose: { type: 'boolean' },
        help: { type: 'boolean', short: 'h' },
      },
    });
  } catch (e) {
    throw new UsageError((e as Error).message);
  }
}

type Values = ReturnType<typeof parse>['values'];

/** The filter options as the admin API's query (validated by the same parser). */
function filterQuery(v: Values): Record<string, string | string[]> {
  const q: Record<string, string | string[]> = {};
  for (const [opt, param] of Object.entries(FILTERS)) {
    const given = v[opt as keyof Values] as string[] | undefined;
    if (given?.length) q[param] = given.length === 1 ? given[0] : given;
  }
  return q;
}

/** `nestjs-durable runs …`; returns the exit code. */
export async function runRunsCommand(argv: string[], io: CliIo, env: NodeJS.ProcessEnv = process.env): Promise<number> {
  let values: Values;
  let positionals: string[];
  try {
    ({ values, positionals } = parse(argv));
  } catch (e) {
    io.err(`nestjs-durable: ${safeText((e as Error).message)}\n\n${RUNS_USAGE}`);
    return EXIT.usage;
  }
  if (values.help || !positionals.length) {
    (values.help ? io.out : io.err)(RUNS_USAGE);
    return values.help ? 0 : 2;
  }
  const [command, id, ...extra] = positionals;
  const url = values['database-url'] ?? env.DATABASE_URL;
  const usage = (why: string) => (io.err(`nestjs-durable: ${safeText(why)}\n\n${RUNS_USAGE}`), EXIT.usage);
  if (!['list', 'show', 'export', 'cancel', 'resume', 'retry', 'fork', 'delete'].includes(command))
    return usage(`unknown command "runs ${command}"`);
  if (extra.length) return usage(`unexpected "${extra.join(' ')}"`);
  if (values.out !== undefined && command !== 'export') return usage('--out goes with "runs export"');
  if (!url) return usage('set DATABASE_URL (or pass --database-url) to the database the app uses');
  const bulk = values.all === true;
  if (['list'].includes(command) && id) return usage(`"runs list" takes no id; filter with --id-prefix`);
  if (['show', 'export', 'fork'].includes(command) && (!id || bulk)) return usage(`"runs ${command}" needs one run id`);
  if (command === 'delete' && !bulk) return usage('"runs delete" works on many runs: add --all and filters (a dry run without --yes)');
  if (['cancel', 'resume', 'retry'].includes(command) && !!id === bulk)
    return usage(`"runs ${command}" takes a run id, or --all with filters`);

  if (values['read-url'] !== undefined && command !== 'list') return usage('--read-url goes with "runs list"');
  const readReplicaUrl = command === 'list' ? (values['read-url'] ?? (env.DURABLE_READ_REPLICA_URL || undefined)) : undefined;
  if (readReplicaUrl !== undefined && !isPostgresUrl(readReplicaUrl)) {
    return usage('--read-url (DURABLE_READ_REPLICA_URL) must be a Postgres URL of a read replica: postgresql://user@host:5432/db');
  }
  const engine = new DurableEngine({
    registry: new WorkflowRegistry(),
    connection: url,
    poolSize: 2,
    options: { worker: false, schedules: false },
  });
  const admin = new AdminService(() => engine, undefined, { readReplicaUrl });
  const print = (json: unknown, text: string) => io.out(values.json ? safeJson(json) : text);
  const one = (given: string) => wholeId(engine, admin, given);
  try {
    // A distributed database (Citus) is read as such: what is not available there is refused, not read from empty tables.
    await readLayout(engine.storeForTools);
    if (command === 'list') {
      const query = { ...filterQuery(values), limit: values.limit ?? '50', sort: values.sort, order: values.order };
      const page = await admin.listRuns(parseListQuery(Object.fromEntries(Object.entries(query).filter(([, v]) => v !== undefined))));
      print(page, formatRunList(page));
    } else if (command === 'show') {
      const run = await admin.getRun(await one(id));
      print(run, formatRun(run as unknown as Parameters<typeof formatRun>[0]));
    } else if (command === 'export') {
      const exported = await admin.exportRun(await one(id));
      const json = safeJson(exported);
      if (values.out === undefined) io.out(json);
      else {
        const file = resolve(io.cwd, values.out);
        try {
          writeFileSync(file, `${json}\n`);
        } catch (e) {
          io.err(`nestjs-durable: could not write ${safeText(file)}: ${safeText((e as Error).message)}`);
          return EXIT.refused;
        }
        const { run } = exported;
        io.err(
          `Exported run ${safeText(run.id)} (${safeText(run.workflowName)}, ${run.status}, ${exported.steps.length} step(s)) to ${safeText(file)}`,
        );
      }
    } else if (command === 'fork') {
      if (values['from-step'] === undefined) return usage('"runs fork" needs --from-step N (0 = run every step again)');
      const from = Number(values['from-step']);
      const source = await one(id);
      const forked = await engine.fork(source, from, { requireRegistered: false, actor: cliActor() });
      print(
        forked,
        `Forked ${safeText(source)} as ${safeText(forked.id)}: ${forked.copiedSteps} step result(s) reused; steps from #${from} on run again.`,
      );
    } else if (!bulk) {
      const target = await one(id);
      if (command === 'retry') {
        // retry is the resume of a FAILED run, as with --all; a cancelled run is continued with "runs resume"
        const run = await engine.getRun(target);
        if (run && run.status !== 'FAILED') throw new IllegalTransitionError(target, run.status, 'retry', ['FAILED']);
      }
      const r =
        command === 'cancel'
          ? await admin.cancel(target, { compensate: values.compensate === true }, cliActor())
          : await admin.resume(target, cliActor());
      print(
        r,
        `${safeText(target)}: ${r.status}${r.cancelRequestedAt && r.status !== 'CANCELLED' ? ' (cancelling: undoing its steps)' : ''}`,
      );
    } else {
      return await bulkCommand(admin, command, values, io, print);
    }
    return EXIT.ok;
  } catch (e) {
    return reportFailure(e, { url, verbose: values.verbose, err: io.err });
  } finally {
    await admin.close();
    await engine.stop().catch(() => undefined);
  }
}

/**
 * The run a command names: its whole id, or the start of exactly one run's id (as git takes a
 * commit's); refused when no run or several runs start so.
 */
async function wholeId(engine: DurableEngine, admin: AdminService, given: string): Promise<string> {
  const id = runId(given);
  if (await engine.getRun(id)) return id;
  const page = await admin.listRuns(parseListQuery({ idPrefix: id, limit: '3' }));
  if (page.items.length === 1) return page.items[0].id;
  if (!page.items.length) throw new CliRefusal(`No run with id "${id}", nor one whose id starts so (see runs list).`);
  const some = page.items.slice(0, 2).map((r) => `"${r.id}"`);
  throw new CliRefusal(
    `"${id}" is the start of ${page.total > 2 ? `${page.total} run ids` : 'two run ids'} (${some.join(', ')}${page.items.length > 2 ? ', …' : ''}): give more of the id.`,
  );
}

/** --all: the dry run; with --yes, every batch with its progress (on stderr, so --json stays one document). */
async function bulkCommand(admin: AdminService, action: string, values: Values, io: CliIo, print: (json: unknown, text: string) => void) {
  const preview = await admin.bulkPreview(parseBulkPreview({ action, filter: filterQuery(values), compensate: values.compensate }));
  const counted = `${preview.matched}${preview.capped ? '+' : ''} run(s)`;
  if (!values.yes) {
    print(
      { ...preview, dryRun: true },
      `Would ${action} ${counted} (${
        Object.entries(preview.byStatus)
          .map(([s, n]) => `${n} ${s}`)
          .join(', ') || 'none'
      }). Nothing changed: add --yes to do it.`,
    );
    return 0;
  }
  let token: string | null = preview.token;
  let last = { done: 0, skipped: 0, skippedRuns: [] as Array<{ id: string; reason: string }> };
  while (token) {
    const { token: t, batchSize } = parseBulkExecute({ token, batchSize: values['batch-size'] ?? 200 });
    const r = await admin.bulkExecute(t, batchSize, cliActor());
    last = { done: r.done, skipped: r.skipped, skippedRuns: [...last.skippedRuns, ...r.skippedRuns].slice(0, 20) };
    io.err(`${action}: ${r.done + r.skipped} of ${preview.matched}`);
    token = r.token;
  }
  print(
    { action, matched: preview.matched, ...last },
    `${action}: ${last.done} run(s) done, ${last.skipped} skipped${last.skipped ? ' (their status changed meanwhile)' : ''}.`,
  );
  return 0;
}

/** Who acts, in the run's history: the command line and the OS user running it. */
function cliActor(): string {
  try {
    return `cli:${userInfo().username}`;
  } catch {
    return 'cli';
  }
}
