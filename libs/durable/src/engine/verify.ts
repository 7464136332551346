import { performance } from 'node:perf_hooks';
import type { Pool } from 'pg';
import { errorText } from '../errors/error-text.js';
import { InvalidOptionsError } from '../errors/index.js';
import type { WorkflowRegistry } from '../definitions/registry.js';
import type { RunStatus } from '../store/rows.js';
import { verifyRunsPage, withReadOnlyTransaction, type VerifyRunRow } from '../store/verify-reads.js';
import { replayAgainstRecording, type ReplayMismatch } from '../workflow/replay.js';
import { readLayout } from './distributed-mode.js';
import { eachPartition } from '../store/store.js';

/** Options of verifyRuns() (and of `npx nestjs-durable verify`). */
export interface VerifyOptions {
  /** Also replay runs that finished within this many ms (e.g. 86_400_000: the last day). Default: unfinished runs only. */
  finishedWithinMs?: number | null;
  /** Only these workflows (default: every workflow that has runs). */
  workflows?: readonly string[];
  /** Runs read (and replayed at once) per page. Default 500. */
  pageSize?: number;
  /** Runs listed per workflow in the report (all are counted). Default 100. */
  listLimit?: number;
  /** Called after each page (runs checked so far, failures so far, ms elapsed). */
  onProgress?: (p: VerifyProgress) => void;
}

export interface VerifyProgress {
  checked: number;
  failed: number;
  elapsedMs: number;
}

/** A run the code would fail. */
export interface VerifyFailure {
  runId: string;
  status: RunStatus;
  appVersion: string | null;
  /**
   * `changed`/`reordered`: the code departs from the run's checkpoints at `seq` (recorded step vs the
   * new code's); `error`: the workflow throws when replayed (`message`); `unknown-workflow`: this
   * build has no workflow of that name, so no instance of it will ever execute the run.
   */
  kind: ReplayMismatch['kind'] | 'error' | 'unknown-workflow';
  seq: number | null;
  recorded: string | null;
  actual: string | null;
  message: string;
}

export interface WorkflowVerifyReport {
  workflow: string;
  checked: number;
  failed: number;
  /** Runs whose replay stopped moving before a checkpoint boundary (awaiting something that is not a durable operation): checked up to there. */
  stalled: number;
  /** The first `listLimit` failures. */
  failures: VerifyFailure[];
}

export interface VerifyReport {
  ok: boolean;
  checked: number;
  failed: number;
  elapsedMs: number;
  workflows: WorkflowVerifyReport[];
}

/**
 * Replays every unfinished run (and optionally recently finished ones) against the workflows of
 * `registry` — the code about to be deployed — and reports, per workflow, the runs it would fail.
 * Reads through `connection` inside one READ ONLY transaction (ended by ROLLBACK), a keyset page of
 * runs with their checkpoints at a time, so memory stays bounded however many runs there are; runs
 * no step body, sends no write (workflow/replay.ts).
 */
export async function verifyRuns(registry: WorkflowRegistry, connection: string | Pool, opts: VerifyOptions = {}): Promise<VerifyReport> {
  const pageSize = opts.pageSize ?? 500;
  const listLimit = opts.listLimit ?? 100;
  const finishedWithinMs = opts.finishedWithinMs ?? null;
  if (!Number.isInteger(pageSize) || pageSize < 1 || pageSize > 10_000)
    throw new InvalidOptionsError(`verify: pageSize must be an integer from 1 to 10000 (got ${JSON.stringify(opts.pageSize)}).`);
  if (finishedWithinMs !== null && !(Number.isFinite(finishedWithinMs) && finishedWithinMs >= 0))
    throw new InvalidOptionsError(`verify: finishedWithinMs must be a number of ms ≥ 0 (got ${JSON.stringify(opts.finishedWithinMs)}).`);
  const started = performance.now();
  const byWorkflow = new Map<string, WorkflowVerifyReport>();
  let checked = 0;
  let failed = 0;
  const report = (name: string) => {
    let w = byWorkflow.get(name);
    if (!w) byWorkflow.set(name, (w = { workflow: name, checked: 0, failed: 0, stalled: 0, failures: [] }));
    return w;
  };
  await withReadOnlyTransaction(connection, async (tx) => {
    await readLayout(tx);
    // Distributed mode: the runs of each partition in turn, paged by id within it.
    await eachPartition(tx, async (store) => {
      let after = '';
      for (;;) {
        const page = await verifyRunsPage(store, after, {
          finishedWithinMs,
          workflows: opts.workflows ? [...opts.workflows] : null,
          limit: pageSize,
        });
        if (!page.length) break;
        after = page[page.length - 1].id;
        const results = await Promise.all(page.map((run) => verifyOne(registry, run)));
        for (let i = 0; i < page.length; i++) {
          const w = report(page[i].workflowName);
          const r = results[i];
          w.checked++;
          checked++;
          if (r === 'stalled') w.stalled++;
          if (!r || r === 'stalled') continue;
          w.failed++;
          failed++;
          if (w.failures.length < listLimit) w.failures.push(r);
        }
        opts.onProgress?.({ checked, failed, elapsedMs: performance.now() - started });
        if (page.length < pageSize) break;
      }
    });
  });
  const workflows = [...byWorkflow.values()].sort((a, b) => a.workflow.localeCompare(b.workflow));
  return { ok: failed === 0, checked, failed, elapsedMs: performance.now() - started, workflows };
}

/** One run: null when the code replays it, 'stalled' when the replay stopped early, else why it would fail. */
async function verifyOne(registry: WorkflowRegistry, run: VerifyRunRow): Promise<VerifyFailure | 'stalled' | null> {
  const base = { runId: run.id, status: run.status, appVersion: run.appVersion };
  if (!registry.has(run.workflowName)) {
    return {
      ...base,
      kind: 'unknown-workflow',
      seq: null,
      recorded: null,
      actual: null,
      message: `this build has no workflow "${run.workflowName}": no instance running it would ever execute the run`,
    };
  }
  const r = await replayAgainstRecording(registry.get(run.workflowName), run);
  if (r.mismatch) return { ...base, ...r.mismatch, message: r.error!.message };
  // A run that ended FAILED throws again when replayed: that is what it recorded, not a new failure.
  if (r.verdict === 'error' && run.status !== 'FAILED' && run.status !== 'CANCELLED') {
    const seq = r.frontier?.seq ?? null;
    return {
      ...base,
      kind: 'error',
      seq,
      recorded: null,
      actual: null,
      message: `the workflow throws when replayed: ${errorText(r.error)}`,
    };
  }
  return r.outcome === 'stalled' ? 'stalled' : null;
}

/** The report as text: one block per workflow, a line per listed failure, and the totals. */
export function verifyReportText(r: VerifyReport): string {
  const lines: string[] = [];
  for (const w of r.workflows) {
    lines.push(
      `workflow ${w.workflow}: ${w.checked} run(s) checked, ${w.failed} would fail${w.stalled ? `, ${w.stalled} checked only up to a non-durable await` : ''}`,
    );
    for (const f of w.failures) {
      const where = f.seq === null ? '' : ` at step #${f.seq}`;
      const what = f.recorded !== null ? `: recorded "${f.recorded}", new code "${f.actual}" (${f.kind})` : `: ${f.message}`;
      lines.push(`  run ${f.runId} (${f.status}${f.appVersion ? `, version ${f.appVersion}` : ''})${where}${what}`);
    }
    if (w.failed > w.failures.length) lines.push(`  … and ${w.failed - w.failures.length} more`);
  }
  const secs = (r.elapsedMs / 1000).toFixed(2);
  lines.push(`verify: ${r.checked} run(s) checked in ${secs} s; ${r.failed ? `${r.failed} would fail` : 'none would fail'}.`);
  return lines.join('\n');
}
