import { compileCron } from '../definitions/schedule.js';
import { ScheduleConflictError } from '../errors/index.js';
import {
  dbNow,
  deleteSchedule as deleteRow,
  insertSchedule,
  selectSyncSchedules,
  updateSchedule as updateRow,
} from '../store/schedules.js';
import type { ScheduleRow } from '../store/schedules.js';
import type { EngineContext } from './engine-context.js';
import { sameDefinition, valuesOf } from './schedule-values.js';

/**
 * Boot: makes the table match the schedules declared on this process's workflows. A missing one
 * is created (first slot after now); a changed one is updated (a new cron or time zone restarts
 * from now) — its paused state, set at runtime, is kept; a declared schedule of a workflow
 * registered here that no longer declares one is deleted, with a warning naming it (only a process
 * that runs the scheduler syncs: options.schedules = false changes nothing). Schedules of workflows this process does
 * not know are left alone. A runtime schedule holding a declared schedule's id is a
 * ScheduleConflictError.
 *
 * Rolling deploys: with `appVersion` set, a declared row remembers the versions that declared it
 * (declaredVersionsAfter). A process whose version declared it before a later one did leaves it alone,
 * so old and new instances booting in turn during a deploy do not fight over the schedule; a version
 * the row has not seen is a newer deploy and takes it over.
 */
export async function syncDeclaredSchedules(e: EngineContext): Promise<{ created: string[]; updated: string[]; deleted: string[] }> {
  const declared = e.registry.declaredSchedules();
  const out = { created: [] as string[], updated: [] as string[], deleted: [] as string[] };
  const rows = await selectSyncSchedules(
    e.store,
    declared.map((d) => d.def.name),
    e.registry.names(),
  );
  if (!declared.length && !rows.length) return out;
  const byId = new Map(rows.map((r) => [r.id, r]));
  const now = await dbNow(e.store);
  const version = e.options.appVersion ?? null;
  const leftAlone = (r: ScheduleRow) => {
    const owner = r.declaredVersions[r.declaredVersions.length - 1];
    e.options.logger.log(
      `declared schedule "${r.id}" left as it is: app version ${owner} declared it after this process's version ${version} did (a rolling deploy)`,
    );
  };
  for (const { def, spec } of declared) {
    const where = `workflow "${def.name}"`;
    const existing = byId.get(def.name);
    const values = (next: number, paused: boolean, declaredVersions: string[]) => ({
      ...valuesOf(e, where, { workflow: def.name, input: def.options.schedule?.input, paused, source: 'declared' }, spec, next),
      declaredVersions,
    });
    if (!existing) {
      const v = values(compileCron(where, spec.cron, spec.timeZone).next(now), false, version ? [version] : []);
      if (await insertSchedule(e.store, def.name, v)) out.created.push(def.name);
      continue;
    }
    if (existing.source !== 'declared') {
      throw new ScheduleConflictError(
        def.name,
        `The schedule declared on workflow "${def.name}" has the id "${def.name}", which a runtime schedule (workflow "${existing.workflowName}") already uses: delete that schedule or rename the workflow.`,
      );
    }
    const versions = declaredVersionsAfter(existing, version);
    if (versions === 'superseded') {
      leftAlone(existing);
      continue;
    }
    const retimed = existing.cron !== spec.cron || existing.timeZone !== spec.timeZone;
    const next = retimed ? compileCron(where, spec.cron, spec.timeZone).next(now) : existing.nextFireAt.getTime();
    const v = values(next, existing.paused, versions);
    if (sameDefinition(existing, v) && sameVersions(existing.declaredVersions, versions)) continue;
    if (await updateRow(e.store, def.name, existing.revision, v)) out.updated.push(def.name);
  }
  const names = new Set(declared.map((d) => d.def.name));
  for (const r of rows) {
    if (r.source !== 'declared' || names.has(r.id) || !e.registry.has(r.workflowName)) continue;
    if (declaredVersionsAfter(r, version) === 'superseded') {
      leftAlone(r);
      continue;
    }
    if (await deleteRow(e.store, r.id, r.revision)) {
      out.deleted.push(r.id);
      e.options.logger.warn(
        `declared schedule "${r.id}" (cron "${r.cron}") deleted for the whole cluster: workflow "${r.workflowName}" is registered ` +
          `in this process (worker ${e.options.workerId}${e.options.appVersion ? `, app version ${e.options.appVersion}` : ''}) without a ` +
          `schedule. A process that should not manage schedules runs with options.schedules = false.`,
      );
    }
  }
  return out;
}

/** How many app versions a declared row remembers. */
const VERSIONS_KEPT = 20;

/**
 * The versions a declared row records once this process (app version `version`) has synced it, or
 * 'superseded' when a later version declared it after this one: leave it alone. Without an app
 * version (or on a row no version declared yet), the process owns the row, as the last to boot.
 */
export function declaredVersionsAfter(row: ScheduleRow, version: string | null): string[] | 'superseded' {
  const seen = row.declaredVersions;
  if (!version) return seen;
  if (seen.length === 0 || seen[seen.length - 1] === version) return seen.length ? seen : [version];
  if (seen.includes(version)) return 'superseded';
  return [...seen, version].slice(-VERSIONS_KEPT);
}

const sameVersions = (a: string[], b: string[]) => a.length === b.length && a.every((v, i) => v === b[i]);
