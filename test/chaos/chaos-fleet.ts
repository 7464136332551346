import { setTimeout as delay } from 'node:timers/promises';
import { WorkerProcess } from '../support/processes.js';

const SCRIPT = 'test/chaos/chaos-worker.ts';

/** One worker process of the fleet, and what the driver did to it. */
export interface FleetWorker {
  pid: number;
  /** Its engine's workerId (lease_owner, run history): see chaos-app.ts. */
  workerId: string;
  proc: WorkerProcess;
  state: 'running' | 'frozen' | 'killed' | 'stopped' | 'crashed';
  /** Its stdout/stderr lines with the time they arrived. */
  lines: Array<{ at: number; text: string }>;
}

/** A worker that exited without being told to. */
export interface Crash {
  pid: number;
  at: number;
  code: number | null;
  signal: string | null;
  tail: string;
}

/** The worker processes: spawn, SIGKILL, SIGSTOP/SIGCONT, graceful stop; notices crashes. */
export class Fleet {
  readonly all: FleetWorker[] = [];
  readonly crashes: Crash[] = [];
  /** Processes that exited before printing "ready" (e.g. started while Postgres restarted). */
  bootFailures = 0;

  constructor(
    private readonly url: string,
    private readonly env: Record<string, string>,
    private readonly log: (line: string) => void,
  ) {}

  running(): FleetWorker[] {
    return this.all.filter((w) => w.state === 'running');
  }

  byPid(pid: number): FleetWorker | undefined {
    return this.all.find((w) => w.pid === pid);
  }

  /** Starts a worker and waits until it claims; retries a few times if it fails to boot. */
  async spawn(): Promise<FleetWorker> {
    for (let attempt = 1; ; attempt++) {
      try {
        return this.adopt(await WorkerProcess.start(this.url, this.env, SCRIPT));
      } catch (err) {
        this.bootFailures++;
        if (attempt >= 10) throw err;
        this.log(`a worker failed to boot (attempt ${attempt}), retrying: ${(err as Error).message.split('\n')[0]}`);
        await delay(1_000);
      }
    }
  }

  private adopt(proc: WorkerProcess): FleetWorker {
    const w: FleetWorker = { pid: proc.pid, workerId: `chaos:${proc.pid}`, proc, state: 'running', lines: [] };
    const at = Date.now();
    for (const text of proc.output.split('\n')) if (text) w.lines.push({ at, text });
    for (const stream of [proc.child.stdout!, proc.child.stderr!]) {
      let partial = '';
      stream.on('data', (d: Buffer) => {
        const parts = (partial + d.toString()).split('\n');
        partial = parts.pop()!;
        const now = Date.now();
        for (const text of parts) if (text) w.lines.push({ at: now, text });
      });
    }
    const onExit = (code: number | null, signal: string | null) => {
      if (w.state === 'killed' || w.state === 'stopped') return;
      w.state = 'crashed';
      this.crashes.push({
        pid: w.pid,
        at: Date.now(),
        code,
        signal,
        tail: w.lines
          .slice(-30)
          .map((l) => l.text)
          .join('\n'),
      });
      this.log(`worker ${w.pid} CRASHED (exit ${code ?? signal})`);
    };
    proc.child.on('exit', onExit);
    if (proc.child.exitCode !== null) onExit(proc.child.exitCode, proc.child.signalCode);
    this.all.push(w);
    return w;
  }

  kill(w: FleetWorker): void {
    w.state = 'killed';
    w.proc.kill('SIGKILL');
  }

  freeze(w: FleetWorker): void {
    w.state = 'frozen';
    w.proc.kill('SIGSTOP');
  }

  thaw(w: FleetWorker): void {
    if (w.state !== 'frozen') return;
    w.state = 'running';
    w.proc.kill('SIGCONT');
  }

  /**
   * SIGTERM every live worker (continuing frozen ones first); returns those that did not shut down
   * gracefully. Nest's shutdown hooks close the app, then re-raise the signal: a graceful exit is
   * code 0 or "killed by SIGTERM"; SIGKILL means it did not stop within 20 s.
   */
  async stopAll(): Promise<Array<{ pid: number; code: number | string | null }>> {
    const live = this.all.filter((w) => w.state === 'running' || w.state === 'frozen');
    for (const w of live) this.thaw(w);
    const codes = await Promise.all(
      live.map(async (w) => {
        w.state = 'stopped';
        const code = await w.proc.stop(20_000);
        return { pid: w.pid, code: code ?? w.proc.child.signalCode };
      }),
    );
    return codes.filter((c) => c.code !== 0 && c.code !== 'SIGTERM');
  }

  /** SIGKILL everything still alive (cleanup after an error). */
  killAll(): void {
    for (const w of this.all) {
      if (w.proc.child.exitCode !== null || w.proc.child.signalCode !== null) continue;
      if (w.state !== 'killed') w.state = 'stopped';
      w.proc.kill('SIGCONT');
      w.proc.kill('SIGKILL');
    }
  }
}
