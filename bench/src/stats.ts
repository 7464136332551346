/** Percentiles with linear interpolation between closest ranks. */

export function percentile(sortedAsc: readonly number[], p: number): number {
  if (sortedAsc.length === 0) return NaN;
  if (sortedAsc.length === 1) return sortedAsc[0];
  const rank = (p / 100) * (sortedAsc.length - 1);
  const lo = Math.floor(rank);
  const hi = Math.ceil(rank);
  return sortedAsc[lo] + (sortedAsc[hi] - sortedAsc[lo]) * (rank - lo);
}

export function percentiles<P extends number>(values: readonly number[], ps: readonly P[]): Record<`p${P}`, number> {
  const sorted = [...values].sort((a, b) => a - b);
  const out = {} as Record<`p${P}`, number>;
  for (const p of ps) out[`p${p}` as `p${P}`] = percentile(sorted, p);
  return out;
}

export function p50p90p99(values: readonly number[]): { p50: number; p90: number; p99: number } {
  return percentiles(values, [50, 90, 99]);
}
