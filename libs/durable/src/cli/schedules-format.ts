/** Text output of `nestjs-durable schedules list|show`: aligned columns, times in UTC, stored text escaped. */
import type { ScheduleRun, ScheduleView } from '../engine/schedule-types.js';
import { table } from './runs-format.js';
import { safeText } from './safe-text.js';

const time = (d: Date | null) =>
  d
    ? d
        .toISOString()
        .replace('T', ' ')
        .replace(/\.\d+Z$/, 'Z')
    : '—';

export function formatScheduleList(list: ScheduleView[]): string {
  if (!list.length) return 'No schedules.';
  const rows = [['ID', 'WORKFLOW', 'CRON', 'TIME ZONE', 'STATE', 'NEXT', 'LAST RUN']];
  for (const s of list) {
    const last = s.lastRunId ? `${s.lastRunId} ${s.lastRunStatus ?? '(deleted)'}` : '—';
    rows.push([
      s.id,
      s.workflowName,
      s.cron,
      s.timeZone,
      `${s.paused ? 'paused' : 'active'} ${s.source}`,
      s.paused ? '—' : time(s.nextFireAt),
      last,
    ]);
  }
  return `${table(rows)}\n${list.length} schedule(s).`;
}

export function formatSchedule(s: ScheduleView, runs: ScheduleRun[]): string {
  const lines = [
    `${s.id}  ${s.workflowName}  ${s.paused ? 'PAUSED' : 'ACTIVE'} (${s.source})`,
    `cron ${s.cron} · ${s.timeZone} · next ${s.paused ? '— (paused)' : time(s.nextFireAt)} · overlap ${s.overlap} · catch-up ${s.catchUp} · jitter ${s.jitterMs} ms`,
  ].map(safeText);
  if (s.input !== undefined) lines.push(safeText(`input ${JSON.stringify(s.input)}`));
  if (runs.length) {
    lines.push('');
    const rows = [['RUN', 'STATUS', 'SLOT', 'CREATED', 'FINISHED']];
    for (const r of runs) rows.push([r.id, r.status, r.manual ? 'manual' : (r.scheduledAt ?? '—'), time(r.createdAt), time(r.finishedAt)]);
    lines.push(table(rows));
  } else lines.push('', 'No runs yet.');
  return lines.join('\n');
}
