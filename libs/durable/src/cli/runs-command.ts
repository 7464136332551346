import { writeFileSync } from 'node:fs';
import { userInfo } from 'node:os';
import { resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { AdminService } from '../admin/admin-service.js';
import { parseBulkExecute, parseBulkPreview } from '../admin/bulk-params.js';
import { parseListQuery, runId } from '../admin/params.js';
import { WorkflowRegistry } from '../definitions/registry.js';
import { DurableEngine } from '../engine/durable-engine.js';
import { DurableError, IllegalTransitionError } from '../errors/index.js';
import type { CliIo } from './cli-io.js';
import { formatRun, formatRunList } from './runs-format.js';

export const RUNS_USAGE = `Usage: npx nestjs-durable runs <command> [options]     (DATABASE_URL, or --database-url)

Works on the database directly: no app needs to run. Actions use the same statements as the app.
  runs list   [filters] [--limit N] [--sort created|updated] [--order desc|asc]
  runs show   <id>
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
--json prints JSON (one document) instead of text. Exit codes: 0 done; 1 refused (the message says why); 2 bad command line.`;

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
    io.err(`nestjs-durable: ${(e as Error).message}\n\n${RUNS_USAGE}`);
    return 2;
  }
  if (values.help || !positionals.length) {
    (values.help ? io.out : io.err)(RUNS_USAGE);
    return values.help ? 0 : 2;
  }
  const [command, id, ...extra] = positionals;
  const url = values['database-url'] ?? env.DATABASE_URL;
  const usage = (why: string) => (io.err(`nestjs-durable: ${why}\n\n${RUNS_USAGE}`), 2);
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

  const engine = new DurableEngine({
    registry: new WorkflowRegistry(),
    connection: url,
    poolSize: 2,
    options: { worker: false, schedules: false },
  });
  const admin = new AdminService(() => engine);
  const print = (json: unknown, text: string) => io.out(values.json ? JSON.stringify(json, null, 2) : text);
  try {
    if (command === 'list') {
      const query = { ...filterQuery(values), limit: values.limit ?? '50', sort: values.sort, order: values.order };
      const page = await admin.listRuns(parseListQuery(Object.fromEntries(Object.entries(query).filter(([, v]) => v !== undefined))));
      print(page, formatRunList(page));
    } else if (command === 'show') {
      const run = await admin.getRun(runId(id));
      print(run, formatRun(run as unknown as Parameters<typeof formatRun>[0]));
    } else if (command === 'export') {
      const exported = await admin.exportRun(runId(id));
      const json = JSON.stringify(exported, null, 2);
      if (values.out === undefined) io.out(json);
      else {
        const file = resolve(io.cwd, values.out);
        try {
          writeFileSync(file, `${json}\n`);
        } catch (e) {
          io.err(`nestjs-durable: could not write ${file}: ${(e as Error).message}`);
          return 1;
        }
        io.err(`Exported run ${id} (${exported.run.workflowName}, ${exported.run.status}, ${exported.steps.length} step(s)) to ${file}`);
      }
    } else if (command === 'fork') {
      if (values['from-step'] === undefined) return usage('"runs fork" needs --from-step N (0 = run every step again)');
      const from = Number(values['from-step']);
      const forked = await engine.fork(runId(id), from, { requireRegistered: false, actor: cliActor() });
      print(forked, `Forked ${id} as ${forked.id}: ${forked.copiedSteps} step result(s) reused; steps from #${from} on run again.`);
    } else if (!bulk) {
      if (command === 'retry') {
        // retry is the resume of a FAILED run, as with --all; a cancelled run is continued with "runs resume"
        const run = await engine.getRun(runId(id));
        if (run && run.status !== 'FAILED') throw new IllegalTransitionError(id, run.status, 'retry', ['FAILED']);
      }
      const r =
        command === 'cancel'
          ? await admin.cancel(runId(id), { compensate: values.compensate === true }, cliActor())
          : await admin.resume(runId(id), cliActor());
      print(r, `${id}: ${r.status}${r.cancelRequestedAt && r.status !== 'CANCELLED' ? ' (cancelling: undoing its steps)' : ''}`);
    } else {
      return await bulkCommand(admin, command, values, io, print);
    }
    return 0;
  } catch (e) {
    if (!(e instanceof DurableError)) throw e;
    io.err(`nestjs-durable: ${e.message}`);
    return 1;
  } finally {
    await engine.stop();
  }
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
