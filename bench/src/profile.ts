/**
 * In-process CPU profile (the V8 sampling profiler through node:inspector), so the benchmark can
 * profile exactly one phase of one process, parent or child. Writes a .cpuprofile (open it in
 * Chrome DevTools or speedscope) and returns the top self-time items.
 */
import { Session } from 'node:inspector/promises';
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}
interface Profile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
  startTime: number;
  endTime: number;
}

export interface ProfileSummary {
  file: string;
  totalMs: number;
  /** Self time by function, largest first. */
  top: Array<{ ms: number; pct: number; fn: string }>;
  /** Self time by origin: library (libs/durable), pg driver, node internals, GC, idle, other. */
  byOrigin: Record<string, number>;
}

let session: Session | undefined;

export async function startProfile(): Promise<void> {
  session = new Session();
  session.connect();
  await session.post('Profiler.enable');
  await session.post('Profiler.setSamplingInterval', { interval: 200 });
  await session.post('Profiler.start');
}

function origin(url: string, fn: string): string {
  if (fn === '(garbage collector)') return 'gc';
  if (fn === '(idle)' || fn === '(program)') return fn.slice(1, -1);
  if (url.includes('/libs/durable/')) return 'nestjs-durable';
  if (url.includes('/node_modules/pg') || url.includes('/node_modules/postgres-')) return 'pg driver';
  if (url.includes('/bench/src/')) return 'bench harness';
  if (url.includes('/node_modules/')) return 'other packages';
  if (url.startsWith('node:') || url === '') return 'node internals';
  return 'other';
}

export async function stopProfile(file: string, topN = 15): Promise<ProfileSummary> {
  if (!session) throw new Error('profile not started');
  const { profile } = (await session.post('Profiler.stop')) as { profile: Profile };
  session.disconnect();
  session = undefined;
  mkdirSync(dirname(file), { recursive: true });
  writeFileSync(file, JSON.stringify(profile));
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const self = new Map<number, number>();
  profile.samples.forEach((id, i) => self.set(id, (self.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0)));
  const byFn = new Map<string, number>();
  const byOrigin: Record<string, number> = {};
  let total = 0;
  for (const [id, us] of self) {
    const { functionName, url, lineNumber } = byId.get(id)!.callFrame;
    const fn = `${functionName || '(anonymous)'} ${url.replace(/^file:\/\/.*?\/(libs|bench|node_modules)\//, '$1/')}:${lineNumber + 1}`;
    byFn.set(fn, (byFn.get(fn) ?? 0) + us);
    const o = origin(url, functionName);
    byOrigin[o] = (byOrigin[o] ?? 0) + us / 1000;
    total += us;
  }
  const busy = total - (byOrigin.idle ?? 0) * 1000;
  const top = [...byFn.entries()]
    .filter(([fn]) => !fn.startsWith('(idle)'))
    .sort((a, b) => b[1] - a[1])
    .slice(0, topN)
    .map(([fn, us]) => ({ ms: us / 1000, pct: (100 * us) / Math.max(1, busy), fn }));
  for (const k of Object.keys(byOrigin)) byOrigin[k] = Math.round(byOrigin[k]);
  return { file, totalMs: total / 1000, top, byOrigin };
}
