import { spawn, type ChildProcess } from 'node:child_process';
import { childArgs } from '../../support/processes.js';

/**
 * The example app as a child process: src/main.ts bundled as the tests' other children are
 * (test/support/processes.ts; no build step: the example injects everything with explicit @Inject(),
 * so it runs without decorator metadata). Collects the output and finds the URL the app prints once
 * it listens.
 */
export class AppProcess {
  output = '';
  url = '';
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;

  private constructor(readonly child: ChildProcess) {
    const collect = (d: Buffer) => (this.output += d.toString());
    child.stdout!.on('data', collect);
    child.stderr!.on('data', collect);
    this.exited = new Promise((r) => child.on('exit', (code, signal) => r({ code, signal })));
  }

  static async start(env: Record<string, string>, timeoutMs = 60_000): Promise<AppProcess> {
    const childEnv: NodeJS.ProcessEnv = { ...process.env, NODE_OPTIONS: '', NO_COLOR: '1', ...env };
    // node itself runs the app (no launcher in between that a SIGKILL would hit instead of the app).
    const child = spawn(process.execPath, await childArgs('src/main.ts'), {
      cwd: process.cwd(),
      env: childEnv,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const p = new AppProcess(child);
    const line = await p.waitFor(/example shop on (http:\/\/\S+)/, timeoutMs);
    p.url = line[1];
    return p;
  }

  /** Waits until the output matches; returns the match. */
  async waitFor(pattern: RegExp | string, timeoutMs = 30_000): Promise<RegExpMatchArray> {
    const re = typeof pattern === 'string' ? new RegExp(pattern.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')) : pattern;
    const end = Date.now() + timeoutMs;
    for (;;) {
      const m = this.output.match(re);
      if (m) return m;
      if (this.child.exitCode !== null || this.child.signalCode !== null) {
        throw new Error(`app ${this.child.pid} exited (${this.child.exitCode ?? this.child.signalCode}) before ${re}:\n${this.output}`);
      }
      if (Date.now() > end) throw new Error(`app ${this.child.pid}: no ${re} within ${timeoutMs} ms:\n${this.output}`);
      await new Promise((r) => setTimeout(r, 25));
    }
  }

  /** Number of output lines containing `text`. */
  count(text: string): number {
    return this.output.split('\n').filter((l) => l.includes(text)).length;
  }

  kill(signal: NodeJS.Signals): void {
    if (this.child.exitCode === null && this.child.signalCode === null) this.child.kill(signal);
  }

  /** SIGTERM, then SIGKILL if it has not exited after timeoutMs. */
  async stop(timeoutMs = 10_000) {
    this.kill('SIGTERM');
    const t = setTimeout(() => this.kill('SIGKILL'), timeoutMs);
    const r = await this.exited;
    clearTimeout(t);
    return r;
  }
}

/** fetch + JSON, throwing on a non-2xx answer with its body. */
export async function http<T = any>(
  url: string,
  init: { method?: string; body?: unknown; headers?: Record<string, string> } = {},
): Promise<T> {
  const res = await fetch(url, {
    method: init.method ?? 'GET',
    headers: { ...(init.body === undefined ? {} : { 'content-type': 'application/json' }), ...init.headers },
    body: init.body === undefined ? undefined : JSON.stringify(init.body),
  });
  const text = await res.text();
  if (!res.ok) throw new Error(`${init.method ?? 'GET'} ${url} → ${res.status}: ${text}`);
  return (text ? JSON.parse(text) : undefined) as T;
}
