import { BadRequestException } from '@nestjs/common';

const DAY = /^(\d{4})-(\d{2})-(\d{2})$/;

/**
 * The day of POST /reports: a real calendar day written YYYY-MM-DD, from 1970 to 9999 (a date
 * JavaScript would roll over, such as 2026-02-30, is refused, and so is a year Postgres cannot store
 * as a timestamp the report queries). Without one, today (UTC).
 */
export function parseReportDay(body: unknown, today = new Date()): string {
  const raw = (body as { day?: unknown } | null)?.day ?? today.toISOString().slice(0, 10);
  const m = typeof raw === 'string' ? DAY.exec(raw) : null;
  const date = m ? new Date(Date.UTC(Number(m[1]), Number(m[2]) - 1, Number(m[3]))) : null;
  const real = date !== null && date.toISOString().slice(0, 10) === raw && date.getUTCFullYear() >= 1970;
  if (!real) throw new BadRequestException(['day must be a calendar day written YYYY-MM-DD, from 1970-01-01 to 9999-12-31']);
  return raw as string;
}
