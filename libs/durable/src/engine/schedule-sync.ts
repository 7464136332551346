import { compileCron } from '../definitions/schedule.js';
import { ScheduleConflictError } from '../errors/index.js';
import {
  dbNow,
  deleteSchedule as deleteRow,
  insertSchedule,
  selectSyncSchedules,
  updateSchedule as updateRow,
} from '../store/schedules.js';
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
  for (const { def, spec } of declared) {
    const where = `workflow "${def.name}"`;
    const existing = byId.get(def.name);
    const values = (next: number, paused: boolean) =>
      valuesOf(e, where, { workflow: def.name, input: def.options.schedule?.input, paused, source: 'declared' }, spec, next);
    if (!existing) {
      if (await insertSchedule(e.store, def.name, values(compileCron(where, spec.cron, spec.timeZone).next(now), false)))
        out.created.push(def.name);
      continue;
    }
    if (existing.source !== 'declared') {
      throw new ScheduleConflictError(
        def.name,
        `The schedule declared on workflow "${def.name}" has the id "${def.name}", which a runtime schedule (workflow "${existing.workflowName}") already uses: delete that schedule or rename the workflow.`,
      );
    }
    const retimed = existing.cron !== spec.cron || existing.timeZone !== spec.timeZone;
    const v = values(retimed ? compileCron(where, spec.cron, spec.timeZone).next(now) : existing.nextFireAt.getTime(), existing.paused);
    if (sameDefinition(existing, v)) continue;
    if (await updateRow(e.store, def.name, existing.revision, v)) out.updated.push(def.name);
  }
  const names = new Set(declared.map((d) => d.def.name));
  for (const r of rows) {
    if (r.source === 'declared' && !names.has(r.id) && e.registry.has(r.workflowName) && (await deleteRow(e.store, r.id, r.revision))) {
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
