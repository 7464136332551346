/** An interval something executed in (ms since the epoch), e.g. a run holding its slot. */
export interface Interval {
  runId: string;
  key: string | null;
  pid: number;
  start: number;
  end: number;
}

/** Most intervals open at one instant (an end at the same instant as a start does not overlap it). */
export function maxOverlap(xs: Interval[]): number {
  const ev = xs.flatMap((x) => [
    [x.start, 1],
    [x.end, -1],
  ]);
  ev.sort((a, b) => a[0] - b[0] || a[1] - b[1]);
  let open = 0;
  let max = 0;
  for (const [, d] of ev) max = Math.max(max, (open += d));
  return max;
}

/** The intervals grouped by key (intervals without a key left out). */
export function byKey(xs: Interval[]): Map<string, Interval[]> {
  const m = new Map<string, Interval[]>();
  for (const x of xs) if (x.key !== null) m.set(x.key, [...(m.get(x.key) ?? []), x]);
  return m;
}

/** Most starts (ms, sorted) in any half-open window [t, t + periodMs) that begins at a start. */
export function mostInWindow(starts: number[], periodMs: number): number {
  let most = 0;
  for (let i = 0, j = 0; i < starts.length; i++) {
    while (j < starts.length && starts[j] < starts[i] + periodMs) j++;
    most = Math.max(most, j - i);
  }
  return most;
}
