/** The scale sub-command's table: one column per table size, the last column its ratio to the first. */
import type { ScaleRowsReport } from './main.js';

export function renderScaleRows(r: ScaleRowsReport): string {
  const cps = r.checkpoints;
  if (!cps.length) return `scale: nothing measured${r.stoppedBecause ? `: ${r.stoppedBecause}` : ''}`;
  const header = ['figure', ...cps.map((c) => `${(c.runs / 1e6).toFixed(2)} M runs`), cps.length > 1 ? 'last / first' : ''];
  const rows: string[][] = [];
  const add = (name: string, f: (c: (typeof cps)[number]) => number, digits = 2) => {
    const v = cps.map(f);
    rows.push([
      name,
      ...v.map((x) => x.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: digits })),
      cps.length > 1 ? `${(v.at(-1)! / v[0]).toFixed(2)}x` : '',
    ]);
  };
  add('bytes/run: tables', (c) => c.bytesPerRun.tables, 0);
  add('bytes/run: indexes', (c) => c.bytesPerRun.indexes, 0);
  add('bytes/run: total', (c) => c.bytesPerRun.total, 0);
  for (const t of cps[0].tables)
    add(
      `  ${t.table} MiB (table + indexes)`,
      (c) => {
        const x = c.tables.find((y) => y.table === t.table)!;
        return (x.tableBytes + x.indexBytes) / 2 ** 20;
      },
      0,
    );
  add('claim p50 ms (limit 10, 2000 due)', (c) => c.claim.p50Ms);
  add('claim p99 ms', (c) => c.claim.p99Ms);
  add('empty-queue claim p50 ms', (c) => c.claim.emptyP50Ms);
  add('claimed runs/s (one connection)', (c) => c.claim.runsPerSec, 0);
  for (const q of cps[0].admin) add(`${q.name} p50 ms`, (c) => c.admin.find((x) => x.name === q.name)?.p50Ms ?? NaN, 1);
  add('retention: runs deleted/s (batches of 500)', (c) => c.retention.runsPerSec, 0);
  add('retention: batch p50 ms', (c) => c.retention.batchP50Ms, 0);
  add('fill s (no indexes)', (c) => c.fillSeconds, 0);
  add('index build s', (c) => c.indexBuildSeconds, 0);
  add('VACUUM ANALYZE s', (c) => c.vacuumAnalyzeSeconds, 0);
  add('load average (1 min) at the end', (c) => c.loadAverage[0], 1);
  const all = [header, ...rows];
  const w = header.map((_, i) => Math.max(...all.map((l) => l[i].length)));
  const line = (l: string[]) => l.map((x, i) => (i === 0 ? x.padEnd(w[i]) : x.padStart(w[i]))).join(' | ');
  return [
    `Finished runs at scale (${r.meta.steps} steps + 3 history events per run; autovacuum ${r.meta.autovacuum}: VACUUM ANALYZE by the bench)`,
    line(header),
    w.map((x) => '-'.repeat(x)).join('-|-'),
    ...rows.map(line),
    ...(r.stoppedBecause ? [`stopped: ${r.stoppedBecause}`] : []),
  ].join('\n');
}
