import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';

/** Preload that makes a child exit when the test process that started it is gone. */
const EXIT_WITH_PARENT = join(process.cwd(), 'test/support/exit-with-parent.ts');

const bundles = new Map<string, Promise<string>>();

/**
 * The node arguments that run `script` in a child: its bundle (test/support/child-bundle.mjs, built once per script and
 * test file) with plain node. DURABLE_TEST_CHILD_TSX=1 runs the TypeScript through tsx instead
 * (`--import tsx` runs it in this one process: the tsx CLI would fork a grandchild that signals sent
 * to the child would not reach), with stack traces that point into the sources.
 */
export async function childArgs(script: string): Promise<string[]> {
  if (process.env.DURABLE_TEST_CHILD_TSX === '1') return ['--import', 'tsx', '--import', EXIT_WITH_PARENT, join(process.cwd(), script)];
  let bundle = bundles.get(script);
  if (!bundle) {
    bundle = promisify(execFile)(process.execPath, ['test/support/child-bundle.mjs', script], {
      env: { ...process.env, NODE_OPTIONS: '' },
    }).then((r) => r.stdout.trim());
    bundles.set(script, bundle);
  }
  return [await bundle];
}

/** A worker child process running test/support/worker-main.ts (a real Nest application context). */
export class WorkerProcess {
  output = '';
  private exited: Promise<number | null>;

  private constructor(readonly child: ChildProcess) {
    child.stdout!.on('data', (d) => (this.output += d));
    child.stderr!.on('data', (d) => (this.output += d));
    this.exited = new Promise((r) => child.on('exit', (code) => r(code)));
  }

  get pid(): number {
    return this.child.pid!;
  }

  static async start(
    databaseUrl: string,
    env: Record<string, string> = {},
    script = 'test/support/worker-main.ts',
  ): Promise<WorkerProcess> {
    const child = spawn(process.execPath, await childArgs(script), {
      env: { ...process.env, NODE_OPTIONS: '', DATABASE_URL: databaseUrl, ...env },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    const w = new WorkerProcess(child);
    // generous: a loaded 2-core machine may take tens of seconds to start a Nest app
    await w.waitFor('ready', 150_000);
    return w;
  }

  async waitFor(text: string, timeoutMs = 30_000): Promise<void> {
    const end = Date.now() + timeoutMs;
    while (!this.output.includes(text)) {
      if (this.child.exitCode !== null)
        throw new Error(`worker ${this.pid} exited (${this.child.exitCode}) before "${text}":\n${this.output}`);
      if (Date.now() > end) throw new Error(`worker ${this.pid}: no "${text}" within ${timeoutMs} ms:\n${this.output}`);
      await new Promise((r) => setTimeout(r, 25));
    }
  }

  kill(signal: NodeJS.Signals): void {
    this.child.kill(signal);
  }

  /** SIGTERM and wait for a graceful exit (SIGKILL after timeoutMs). */
  async stop(timeoutMs = 15_000): Promise<number | null> {
    if (this.child.exitCode !== null || this.child.signalCode !== null) return this.child.exitCode;
    this.child.kill('SIGTERM');
    const t = setTimeout(() => this.child.kill('SIGKILL'), timeoutMs);
    const code = await this.exited;
    clearTimeout(t);
    return code;
  }

  async exit(): Promise<number | null> {
    return this.exited;
  }
}
