import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { eventually } from '../support/engine-harness.js';
import { AppProcess, http } from './support/app-process.js';

/**
 * The example's embedded Postgres shared by several example processes (docs/operations.md, "Embedded Postgres for development"):
 * two started at once on a new folder create one server (the other waits and joins it); the
 * first to stop leaves it to the other; a process killed with SIGKILL leaves the server running,
 * a later process joins it, and the last to stop gracefully stops it.
 */
describe('example app: one embedded Postgres shared by several processes', () => {
  const dir = mkdtempSync(join(tmpdir(), 'durable-embedded-'));
  chmodSync(dir, 0o755); // run as root, the server runs as the OS user "postgres", which has to get in
  const dataDir = join(dir, 'postgres');
  const apps: AppProcess[] = [];
  const env = {
    DATABASE_URL: '', // none: the embedded Postgres
    EMBEDDED_PG_DIR: dataDir,
    PORT: '0',
    DURABLE_SHUTDOWN_GRACE_MS: '500',
    PRISMA_POOL_SIZE: '3',
    DURABLE_POOL_SIZE: '3',
  };
  const start = async () => {
    const app = await AppProcess.start(env, 120_000);
    apps.push(app);
    return app;
  };
  /** The server's pid while one runs on the folder. */
  const serverPid = (): number | null => {
    try {
      const pid = Number(readFileSync(join(dataDir, 'postmaster.pid'), 'utf8').split('\n')[0]);
      process.kill(pid, 0);
      return pid;
    } catch {
      return null;
    }
  };

  afterAll(async () => {
    for (const a of apps) a.kill('SIGKILL');
    await Promise.all(apps.map((a) => a.exited));
    const pid = serverPid(); // a failed run may leave the server running: it outlives the apps by design
    if (pid) {
      process.kill(pid, 'SIGQUIT');
      await eventually(async () => serverPid() === null, 30_000, 'the embedded Postgres to stop');
    }
    rmSync(dir, { recursive: true, force: true });
  });

  it('the first processes share one server; the last one to stop gracefully stops it, a killed one leaves it to the next', async () => {
    const [a, b] = await Promise.all([start(), start()]);
    const outputs = [a.output, b.output].join('\n');
    expect(outputs.match(/embedded Postgres created and started/g)).toHaveLength(1);
    expect(outputs.match(/embedded Postgres already running \(pid \d+\), connected/g)).toHaveLength(1);
    const server = serverPid()!;
    expect(server).toBeGreaterThan(0);
    const creator = a.output.includes('created and started') ? a : b;
    const joiner = creator === a ? b : a;

    // The creator stops first: the other still uses the server, so it keeps running.
    creator.kill('SIGINT');
    expect(await creator.exited).toEqual({ code: 0, signal: null });
    expect(creator.output).toContain(`embedded Postgres left running: example process(es) ${joiner.child.pid} still use it`);
    expect(serverPid()).toBe(server);
    expect((await http<Array<{ sku: string }>>(`${joiner.url}/stock`)).length).toBeGreaterThan(0);

    // SIGKILL: no goodbye, the server stays; the next process joins it and, last to leave, stops it.
    joiner.kill('SIGKILL');
    await joiner.exited;
    expect(serverPid()).toBe(server);
    const next = await start();
    expect(next.output).toContain(`embedded Postgres already running (pid ${server}), connected`);
    next.kill('SIGINT');
    expect(await next.exited).toEqual({ code: 0, signal: null });
    expect(next.output).toContain('embedded Postgres stopped (this was the last process using it)');
    expect(serverPid()).toBeNull();
    expect(existsSync(join(dataDir, 'PG_VERSION'))).toBe(true);
    expect(existsSync(`${dataDir}.lock`)).toBe(false);
  }, 240_000);
});
