/**
 * The workers of the "ours" benchmark: in this process (processes = 1) or forked ones
 * (ours-child.ts) that share the queue, behind one interface, with a counter of finished runs.
 */
import { fork, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { startProfile, stopProfile, type ProfileSummary } from '../profile.js';
import type { FromChild, Snap, ToChild } from './ours-child.js';
import { OursHost, addCounts, type HostConfig, type StatementCounts } from './ours-lib.js';

const CHILD = fileURLToPath(new URL('./ours-child.ts', import.meta.url));

// ---- a counter of finished runs ---------------------------------------------------------------

export class DoneCounter {
  n = 0;
  private waiters: Array<{ target: number; resolve: () => void }> = [];
  add(k: number): void {
    this.n += k;
    this.waiters = this.waiters.filter((w) => (this.n >= w.target ? (w.resolve(), false) : true));
  }
  until(target: number, log?: (m: string) => void, total = target): Promise<void> {
    if (this.n >= target) return Promise.resolve();
    const progress = log && setInterval(() => log(`  done ${this.n}/${total}`), 2000);
    return new Promise<void>((resolve) => this.waiters.push({ target, resolve })).finally(() => clearInterval(progress));
  }
}

// ---- worker sets: in-process or forked -------------------------------------------------------

export interface WorkerSet {
  done: DoneCounter;
  /** The in-process host, when processes = 1 (it is also the enqueuer in phase B). */
  host?: OursHost;
  /** CPU ms of the worker processes (0 for in-process: the parent's own figure covers it) and their statement counts. */
  snap(): Promise<Snap>;
  profileStart(): Promise<void>;
  profileStop(file: (i: number) => string): Promise<ProfileSummary[]>;
  stop(): Promise<Snap>;
}

function inProcessSnap(host: OursHost): Snap {
  return { cpuMs: 0, counts: { ...host.counts }, userWrites: host.userWrites, claims: { ...host.claims } };
}

async function startInProcess(cfg: HostConfig): Promise<WorkerSet> {
  const done = new DoneCounter();
  const host = new OursHost(cfg, () => done.add(1));
  await host.start();
  return {
    done,
    host,
    snap: async () => inProcessSnap(host),
    profileStart: () => startProfile(),
    profileStop: async (file) => [await stopProfile(file(0))],
    stop: async () => {
      const s = inProcessSnap(host);
      await host.stop();
      return s;
    },
  };
}

export class Child {
  private readonly proc: ChildProcess;
  private readonly waiting = new Map<string, (m: FromChild) => void>();
  readonly exited: Promise<void>;
  constructor(onDone: (n: number) => void, onError: (e: Error) => void) {
    this.proc = fork(CHILD, [], { execArgv: process.execArgv, stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
    this.proc.on('message', (m: FromChild) => {
      if (m.type === 'done') return onDone(m.n);
      if (m.type === 'error') return onError(new Error(`ours child process: ${m.message}`));
      const key = m.type === 'stopped' ? 'stop' : m.type;
      const w = this.waiting.get(key);
      this.waiting.delete(key);
      w?.(m);
    });
    this.exited = new Promise((r) => this.proc.on('exit', () => r()));
  }
  /** Waits for the next message of type `type`. */
  waitFor<T extends FromChild>(type: string): Promise<T> {
    return new Promise<T>((resolve) => this.waiting.set(type, resolve as (m: FromChild) => void));
  }
  /** Sends a message and waits for the answer of type `answer`. */
  request<T extends FromChild>(m: ToChild, answer: string): Promise<T> {
    return new Promise<T>((resolve) => {
      this.waiting.set(answer, resolve as (m: FromChild) => void);
      this.proc.send(m);
    });
  }
}

export async function startChildWorkers(cfg: HostConfig, count: number): Promise<WorkerSet> {
  const done = new DoneCounter();
  let failure: Error | undefined;
  const children = Array.from(
    { length: count },
    () =>
      new Child(
        (n) => done.add(n),
        (e) => (failure = e),
      ),
  );
  await Promise.all(children.map((c) => c.request({ type: 'init', role: 'worker', cfg }, 'ready')));
  const sum = (snaps: Snap[]): Snap => ({
    cpuMs: snaps.reduce((a, s) => a + s.cpuMs, 0),
    counts: snaps.reduce((a, s) => addCounts(a, s.counts), {} as StatementCounts),
    userWrites: snaps.reduce((a, s) => a + s.userWrites, 0),
    claims: snaps.reduce(
      (a, s) => ({ n: a.n + (s.claims?.n ?? 0), empty: a.empty + (s.claims?.empty ?? 0), ms: a.ms + (s.claims?.ms ?? 0) }),
      {
        n: 0,
        empty: 0,
        ms: 0,
      },
    ),
  });
  const check = () => {
    if (failure) throw failure;
  };
  return {
    done,
    snap: async () => {
      check();
      return sum(
        (await Promise.all(children.map((c) => c.request<{ type: 'snap'; snap: Snap }>({ type: 'snap' }, 'snap')))).map((m) => m.snap),
      );
    },
    profileStart: async () => {
      await Promise.all(children.map((c) => c.request({ type: 'profile-start' }, 'profile')));
    },
    profileStop: async (file) =>
      (
        await Promise.all(
          children.map((c, i) =>
            c.request<{ type: 'profile'; summary: ProfileSummary }>({ type: 'profile-stop', file: file(i) }, 'profile'),
          ),
        )
      ).map((m) => m.summary),
    stop: async () => {
      const snaps = await Promise.all(children.map((c) => c.request<{ type: 'stopped'; snap: Snap }>({ type: 'stop' }, 'stop')));
      await Promise.all(children.map((c) => c.exited));
      return sum(snaps.map((m) => m.snap));
    },
  };
}

/** Worker sets for a phase: in this process when processes = 1, otherwise forked children. */
export function startWorkers(cfg: HostConfig, processes: number): Promise<WorkerSet> {
  return processes === 1 ? startInProcess(cfg) : startChildWorkers(cfg, processes);
}
