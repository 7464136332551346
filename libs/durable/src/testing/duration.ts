import { InvalidArgumentError } from '../errors/index.js';

/** A length of time: milliseconds, or text such as '7d', '60s', '1h30m', '250ms', '2w'. */
export type Duration = number | string;

const UNITS: Record<string, number> = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000, w: 604_800_000 };

/** Milliseconds of a Duration; a clear error for anything else. */
export function durationMs(d: Duration, where: string): number {
  if (typeof d === 'number') {
    if (Number.isFinite(d) && d >= 0) return d;
  } else if (typeof d === 'string' && d.trim()) {
    let total = 0;
    const rest = d.replace(/\s+/g, '').replace(/(\d+(?:\.\d+)?)(ms|s|m|h|d|w)/g, (_, n: string, unit: string) => {
      total += Number(n) * UNITS[unit];
      return '';
    });
    if (!rest) return Math.round(total);
  }
  throw new InvalidArgumentError(
    `${where}: ${JSON.stringify(d)} is not a duration: pass milliseconds (a number ≥ 0) or text such as '7d', '60s', '1h30m', '250ms'.`,
  );
}
