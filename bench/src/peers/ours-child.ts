/**
 * A child process of the "ours" benchmark, driven over the IPC channel (ours.ts forks it with
 * the parent's execArgv, so tsx loads it the same way). Two roles:
 *  - worker:   an engine (worker: true, or false for a starter process); reports finished runs
 *              (batched) and, on request, its CPU time and statement counts; starts runs one by
 *              one from concurrent callers on request (start-runs); stops (graceful engine.stop);
 *  - enqueuer: the idle probe. An engine with worker: false starts `runs` runs one after
 *              another with a random 5–35 ms gap, waiting for each result, so every start
 *              crosses processes (INSERT + pg_notify -> LISTEN in the worker -> claim).
 */
import { oneByOne } from '../callers.js';
import { OursHost, WORKFLOW, diffCounts, type ClaimStats, type HostConfig, type StatementCounts } from './ours-lib.js';
import { startProfile, stopProfile } from '../profile.js';

export type ToChild =
  | { type: 'init'; role: 'worker'; cfg: HostConfig }
  | { type: 'init'; role: 'enqueuer'; cfg: HostConfig; runs: number; prefix: string; payload: string }
  | { type: 'snap' }
  | { type: 'start-runs'; runs: number; callers: number; prefix: string; payload: string }
  | { type: 'profile-start' }
  | { type: 'profile-stop'; file: string }
  | { type: 'stop' };

export interface Snap {
  cpuMs: number;
  counts: StatementCounts;
  userWrites: number;
  /** The claims this process sent (the instances comparison reads their contention). */
  claims?: ClaimStats;
}

export type FromChild =
  | { type: 'ready' }
  | { type: 'done'; n: number }
  | { type: 'snap'; snap: Snap }
  | { type: 'started'; snap: Snap }
  | { type: 'profile'; summary: unknown }
  | { type: 'stopped'; snap: Snap }
  | { type: 'idle-done' }
  | { type: 'error'; message: string };

const send = (m: FromChild) => new Promise<void>((r) => process.send!(m, () => r()));
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const cpuMs = () => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
};

let host: OursHost | undefined;
let pendingDone = 0;
let flushTimer: NodeJS.Timeout | undefined;
const snap = (): Snap => ({
  cpuMs: cpuMs(),
  counts: { ...(host?.counts ?? {}) },
  userWrites: host?.userWrites ?? 0,
  claims: host && { ...host.claims },
});

function runDone(): void {
  pendingDone++;
  // Batch the notifications: one IPC message per 5 ms at most.
  flushTimer ??= setTimeout(() => {
    flushTimer = undefined;
    const n = pendingDone;
    pendingDone = 0;
    void send({ type: 'done', n });
  }, 5);
}

async function handle(m: ToChild): Promise<void> {
  switch (m.type) {
    case 'init': {
      host = new OursHost(m.cfg, runDone);
      await host.start();
      if (m.role === 'worker') return send({ type: 'ready' });
      await send({ type: 'ready' });
      for (let i = 0; i < m.runs; i++) {
        await sleep(5 + Math.random() * 30);
        const h = await host.engine.startRun(WORKFLOW, m.payload, { id: `${m.prefix}${i}` });
        await h.result();
      }
      await host.stop();
      await send({ type: 'idle-done' });
      return process.exit(0);
    }
    case 'snap':
      return send({ type: 'snap', snap: snap() });
    case 'start-runs': {
      // The end-to-end phase from another process: `callers` concurrent one-by-one starters.
      const before = snap();
      await oneByOne(m.runs, m.callers, (i) => host!.engine.startRun(WORKFLOW, m.payload, { id: `${m.prefix}${i}` }));
      const after = snap();
      return send({
        type: 'started',
        snap: { cpuMs: after.cpuMs - before.cpuMs, counts: diffCounts(after.counts, before.counts), userWrites: 0 },
      });
    }
    case 'profile-start':
      await startProfile();
      return send({ type: 'profile', summary: null });
    case 'profile-stop':
      return send({ type: 'profile', summary: await stopProfile(m.file) });
    case 'stop': {
      const s = snap();
      await host?.stop();
      clearTimeout(flushTimer);
      if (pendingDone) await send({ type: 'done', n: pendingDone });
      await send({ type: 'stopped', snap: s });
      return process.exit(0);
    }
  }
}

process.on('message', (m: ToChild) => {
  handle(m).catch(async (err: Error) => {
    await send({ type: 'error', message: err.stack ?? String(err) });
    process.exit(1);
  });
});
process.on('disconnect', () => process.exit(0));
