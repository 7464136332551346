import { parseArgs } from 'node:util';
import { AdminService } from '../admin/admin-service.js';
import { parseListQuery } from '../admin/params.js';
import { WorkflowRegistry } from '../definitions/registry.js';
import { DurableEngine } from '../engine/durable-engine.js';
import type { ScheduleChanges, ScheduleDefinition } from '../engine/schedule-types.js';
import type { RunPlacement } from '../engine/unregistered-workflow.js';
import { ScheduleNotFoundError } from '../errors/index.js';
import type { CliIo } from './cli-io.js';
import { CliRefusal, EXIT, reportFailure } from './cli-errors.js';
import { safeJson, safeText } from './safe-text.js';
import { formatSchedule, formatScheduleList } from './schedules-format.js';
import { duration } from './verify-command.js';

export const SCHEDULES_USAGE = `Usage: npx nestjs-durable schedules <command> [options]     (DATABASE_URL, or --database-url)

Runtime schedules (and the ones declared in code) in the app's database; no app needs to run, and
the workflow need not be known to this command: the app's instances that register it fire the slots.
  schedules list    [--workflow W] [--paused | --active] [--limit N]
  schedules show    <id>                              (with its latest runs)
  schedules create  <id> --workflow W --cron "0 3 * * *" [policies] [--input JSON] [--paused]
  schedules update  <id> [--workflow W] [--cron C] [policies] [--input JSON]   (runtime schedules only)
  schedules delete  <id> --yes                        (its runs stay; a declared one returns at the next boot)
  schedules pause   <id>
  schedules resume  <id>                              (from the first slot after now)
  schedules trigger <id> --yes [--queue Q]            (starts a real run now; asks first on a terminal)

Policies: --time-zone Europe/Paris  --catch-up skip|latest|all  --catch-up-window 24h
  --overlap skip|allow|bufferOne  --jitter 30s
trigger: the run goes to the queue (priority, timeout) of the schedule's latest run, or of the
workflow's latest run; --queue Q when there is none (priority 0, no timeout).
--json prints JSON; --verbose adds the stack to an error.
Exit codes: 0 done; 1 refused (the message says why); 2 bad command line; 3 database unreachable,
login refused or without the nestjs-durable tables; 4 unexpected error.`;

const COMMANDS = ['list', 'show', 'create', 'update', 'delete', 'pause', 'resume', 'trigger'];

function parse(argv: string[]) {
  return parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      workflow: { type: 'string' },
      cron: { type: 'string' },
      'time-zone': { type: 'string' },
      'catch-up': { type: 'string' },
      'catch-up-window': { type: 'string' },
      overlap: { type: 'string' },
      jitter: { type: 'string' },
      input: { type: 'string' },
      paused: { type: 'boolean' },
      active: { type: 'boolean' },
      limit: { type: 'string' },
      queue: { type: 'string' },
      yes: { type: 'boolean' },
      json: { type: 'boolean' },
      'database-url': { type: 'string' },
      verbose: { type: 'boolean' },
      help: { type: 'boolean', short: 'h' },
    },
  });
}

type Values = ReturnType<typeof parse>['values'];

/** The definition fields given on the command line (validated by the engine, as the API's). */
function changesOf(v: Values): ScheduleChanges {
  const c: ScheduleChanges = {};
  if (v.workflow !== undefined) c.workflow = v.workflow;
  if (v.cron !== undefined) c.cron = v.cron;
  if (v['time-zone'] !== undefined) c.timeZone = v['time-zone'];
  if (v['catch-up'] !== undefined) c.catchUp = v['catch-up'] as ScheduleChanges['catchUp'];
  if (v['catch-up-window'] !== undefined) c.catchUpWindowMs = duration(v['catch-up-window'], '--catch-up-window');
  if (v.overlap !== undefined) c.overlap = v.overlap as ScheduleChanges['overlap'];
  if (v.jitter !== undefined) c.jitterMs = duration(v.jitter, '--jitter');
  if (v.input !== undefined) {
    try {
      c.input = JSON.parse(v.input);
    } catch (e) {
      throw new Error(`--input must be JSON (${(e as Error).message})`);
    }
  }
  return c;
}

/** `nestjs-durable schedules …`; returns the exit code. */
export async function runSchedulesCommand(argv: string[], io: CliIo, env: NodeJS.ProcessEnv = process.env): Promise<number> {
  const usage = (why: string) => (io.err(`nestjs-durable: ${safeText(why)}\n\n${SCHEDULES_USAGE}`), EXIT.usage);
  let values: Values;
  let positionals: string[];
  let changes: ScheduleChanges;
  try {
    ({ values, positionals } = parse(argv));
    changes = changesOf(values);
  } catch (e) {
    return usage((e as Error).message);
  }
  if (values.help) return (io.out(SCHEDULES_USAGE), EXIT.ok);
  const [command, id, ...extra] = positionals;
  if (!command) return (io.err(SCHEDULES_USAGE), EXIT.usage);
  if (!COMMANDS.includes(command)) return usage(`unknown command "schedules ${command}"`);
  if (extra.length) return usage(`unexpected "${extra.join(' ')}"`);
  if (command === 'list' ? id : !id)
    return usage(command === 'list' ? '"schedules list" takes no id' : `"schedules ${command}" needs a schedule id`);
  const edits = Object.keys(changes).length > 0;
  if (command === 'create' && (!changes.workflow || !changes.cron)) return usage('"schedules create" needs --workflow and --cron');
  if (command === 'update' && !edits) return usage('"schedules update" needs something to change (--cron, --workflow, --input, a policy)');
  if (edits && !['create', 'update'].includes(command) && !(command === 'list' && Object.keys(changes).join() === 'workflow'))
    return usage(`"schedules ${command}" takes no definition options`);
  if (values.active && values.paused) return usage('--paused or --active, not both');
  const url = values['database-url'] ?? env.DATABASE_URL;
  if (!url) return usage('set DATABASE_URL (or pass --database-url) to the database the app uses');

  const engine = new DurableEngine({
    registry: new WorkflowRegistry(),
    connection: url,
    poolSize: 2,
    options: { worker: false, schedules: false },
  });
  const schedules = engine.schedules;
  const print = (json: unknown, text: string) => io.out(values.json ? safeJson(json) : text);
  const warnIfUnknown = async (workflow: string | undefined) => {
    if (workflow && !(await latestRun(engine, workflow)))
      io.err(
        `nestjs-durable: note: no run of workflow "${safeText(workflow)}" in this database yet; its slots fire only in an app that registers it.`,
      );
  };
  try {
    if (command === 'list') {
      const paused = values.paused ? true : values.active ? false : undefined;
      const limit = values.limit === undefined ? undefined : Number(values.limit);
      const list = await schedules.list({ workflow: changes.workflow, paused, limit });
      print(list, formatScheduleList(list));
    } else if (command === 'show') {
      const s = await schedules.get(id);
      if (!s) throw new ScheduleNotFoundError(id);
      const runs = await schedules.runs(id, { limit: 10 });
      print({ ...s, runs }, formatSchedule(s, runs));
    } else if (command === 'create') {
      const def = { ...changes, id, paused: values.paused } as ScheduleDefinition;
      await warnIfUnknown(def.workflow);
      const s = await schedules.create(def, { requireRegistered: false });
      print(
        s,
        `Schedule ${safeText(s.id)}: workflow ${safeText(s.workflowName)}, ${safeText(s.cron)} (${safeText(s.timeZone)}), next ${nextText(s)}.`,
      );
    } else if (command === 'update') {
      await warnIfUnknown(changes.workflow);
      const s = await schedules.update(id, changes, { requireRegistered: false });
      print(
        s,
        `Schedule ${safeText(s.id)} updated: workflow ${safeText(s.workflowName)}, ${safeText(s.cron)} (${safeText(s.timeZone)}), next ${nextText(s)}.`,
      );
    } else if (command === 'delete') {
      if (!(await schedules.get(id))) throw new ScheduleNotFoundError(id);
      if (!(await confirmed(io, values, `Delete schedule "${safeText(id)}"? Its runs stay.`))) return notConfirmed(io, 'delete');
      await schedules.delete(id);
      print({ id, deleted: true }, `Schedule ${safeText(id)} deleted (its runs stay).`);
    } else if (command === 'pause' || command === 'resume') {
      const s = command === 'pause' ? await schedules.pause(id) : await schedules.resume(id);
      print(s, `Schedule ${safeText(s.id)}: ${s.paused ? 'paused' : `active, next ${nextText(s)}`}.`);
    } else {
      const s = await schedules.get(id);
      if (!s) throw new ScheduleNotFoundError(id);
      const placement = await placementFor(engine, s.lastRunId, s.workflowName, values.queue);
      const question = `Start a run of workflow "${safeText(s.workflowName)}" now (schedule "${safeText(id)}", queue ${safeText(placement.queue)})?`;
      if (!(await confirmed(io, values, question))) return notConfirmed(io, 'trigger');
      const r = await schedules.trigger(id, { unregistered: placement });
      print(
        r,
        `${safeText(id)}: ${r.outcome}${r.outcome === 'skipped' ? ' (a run of it is still active: overlap "skip")' : ''} — run ${safeText(r.runId)}`,
      );
    }
    return EXIT.ok;
  } catch (e) {
    return reportFailure(e, { url, verbose: values.verbose, err: io.err });
  } finally {
    await engine.stop().catch(() => undefined);
  }
}

const nextText = (s: { paused: boolean; nextFireAt: Date }) => (s.paused ? 'none (paused)' : s.nextFireAt.toISOString());

/** --yes, or a yes on the terminal; never without one of them. */
async function confirmed(io: CliIo, values: Values, question: string): Promise<boolean> {
  if (values.yes) return true;
  return io.confirm ? io.confirm(`${question} [y/N] `) : false;
}

function notConfirmed(io: CliIo, what: string): number {
  io.err(`nestjs-durable: nothing done: "schedules ${what}" needs a yes (add --yes when no one answers on a terminal).`);
  return EXIT.refused;
}

async function latestRun(engine: DurableEngine, workflow: string) {
  const page = await new AdminService(() => engine).listRuns(parseListQuery({ workflow, limit: '1' }));
  return page.items[0] ? engine.getRun(page.items[0].id) : null;
}

/**
 * Where a run triggered from here goes, as this process registers no workflow: the queue, priority
 * and timeout of the schedule's latest run (the app's scheduler chose them), else of the workflow's
 * latest run; --queue overrides (priority 0, no timeout).
 */
async function placementFor(engine: DurableEngine, lastRunId: string | null, workflow: string, queue?: string): Promise<RunPlacement> {
  if (queue !== undefined) return { queue };
  const run = (lastRunId && (await engine.getRun(lastRunId))) || (await latestRun(engine, workflow));
  if (!run)
    throw new CliRefusal(
      `No run of workflow "${workflow}" yet tells which queue its runs use: pass --queue, or trigger it from the app (the admin API or the dashboard).`,
    );
  const timeoutMs = run.deadlineAt ? run.deadlineAt.getTime() - run.createdAt.getTime() : null;
  return { queue: run.queue, priority: run.priority, timeoutMs: timeoutMs === null ? null : Math.max(1, timeoutMs) };
}
