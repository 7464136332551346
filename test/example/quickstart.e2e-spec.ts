import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, symlinkSync, mkdirSync, readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { eventually } from '../support/engine-harness.js';
import { http } from './support/app-process.js';

/**
 * README "Quick start", followed literally on a fresh clone of this repository (its committed
 * HEAD, not the working tree):
 *
 *   git clone … && cd …        (a temp folder)
 *   npm install                 (run as `npm install --prefer-offline --no-audit --no-fund`: same
 *                                install, served from the npm cache when it can; ~40 s)
 *   npm start                   (no DATABASE_URL: embedded Postgres; PORT=0 so it cannot collide)
 *   the curl session            (done with fetch: stock, order, watch it, shipment webhook, admin API)
 *
 * QUICKSTART_REUSE_NODE_MODULES=1 links this checkout's node_modules entries into the clone instead
 * of installing (seconds, but it would not notice a dependency missing from package.json).
 * QUICKSTART_KEEP=1 keeps the clone.
 */
const repo = process.cwd();
const reuse = process.env.QUICKSTART_REUSE_NODE_MODULES === '1';

/** The environment of a user's shell: none of the variables npm and jest set for this test run. */
function userEnv(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) {
    if (/^(npm_|NODE_OPTIONS$|DATABASE_URL$|JEST_|DURABLE_TEST_|INIT_CWD$)/i.test(k)) continue;
    env[k] = v;
  }
  // Where the Prisma CLI cannot download its schema engine (no internet), scripts/prisma.mjs uses
  // the workspace's offline engine next to the repo; a clone elsewhere has to be told where it is.
  const offline = resolve(repo, '..', 'shared', 'prisma-offline', 'schema-engine');
  if (!env.PRISMA_SCHEMA_ENGINE_BINARY && existsSync(offline)) env.PRISMA_SCHEMA_ENGINE_BINARY = offline;
  return { ...env, PORT: '0', NO_COLOR: '1' };
}

function run(cmd: string, args: string[], cwd: string, env: NodeJS.ProcessEnv): void {
  try {
    execFileSync(cmd, args, { cwd, env, stdio: 'pipe', timeout: 240_000 });
  } catch (err) {
    const e = err as { stdout?: Buffer; stderr?: Buffer; message: string };
    throw new Error(`${cmd} ${args.join(' ')} failed: ${e.message}\n${e.stdout ?? ''}\n${e.stderr ?? ''}`);
  }
}

/** node_modules as links to this checkout's packages, except the workspace link to the clone's own library. */
function linkNodeModules(clone: string): void {
  mkdirSync(join(clone, 'node_modules'));
  for (const name of readdirSync(join(repo, 'node_modules'))) {
    if (name === 'nestjs-durable') continue;
    symlinkSync(join(repo, 'node_modules', name), join(clone, 'node_modules', name));
  }
  symlinkSync(join('..', 'libs', 'durable'), join(clone, 'node_modules', 'nestjs-durable'));
}

describe('README quick start on a fresh clone (embedded Postgres, no DATABASE_URL)', () => {
  let dir: string;
  let app: ChildProcess | undefined;
  let output = '';

  afterAll(async () => {
    if (app?.pid && app.exitCode === null && app.signalCode === null) {
      process.kill(-app.pid, 'SIGKILL');
      await new Promise((r) => app!.once('exit', r));
    }
    if (dir && process.env.QUICKSTART_KEEP !== '1') rmSync(dir, { recursive: true, force: true });
  });

  it('git clone → npm install → npm start → order placed, paid, shipped, reviewed', async () => {
    const env = userEnv();
    const t0 = Date.now();
    dir = mkdtempSync(join(tmpdir(), 'durable-quickstart-'));
    run('git', ['clone', '--quiet', repo, dir], tmpdir(), env);
    if (reuse) linkNodeModules(dir);
    else run('npm', ['install', '--prefer-offline', '--no-audit', '--no-fund'], dir, env);
    const installed = Date.now();

    app = spawn('npm', ['start'], { cwd: dir, env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
    app.stdout!.on('data', (d) => (output += d));
    app.stderr!.on('data', (d) => (output += d));
    const fail = (err: Error): never => {
      throw new Error(`${err.message}\n--- npm start output:\n${output}`);
    };
    const url = await eventually(async () => {
      if (app!.exitCode !== null) throw new Error(`npm start exited with ${app!.exitCode}`);
      return /example shop on (http:\/\/\S+)/.exec(output)?.[1];
    }, 240_000, 'npm start to listen').catch(fail);
    const listening = Date.now();
    const token = /\(token: ([^\s,)]+)/.exec(output)?.[1];

    // The curl session of the README.
    const stock = await http<Array<{ sku: string }>>(`${url}/stock`);
    expect(stock.map((s) => s.sku)).toContain('grinder');
    const placed = await http(`${url}/orders`, { method: 'POST', body: { customer: 'Ada', email: 'ada@example.com', sku: 'grinder', quantity: 1 } });
    expect(placed).toMatchObject({ status: 'NEW', amount: 12_900 });
    const paid = await eventually(async () => {
      const v = await http(`${url}/orders/${placed.id}`);
      return v.status === 'PAID' ? v : null;
    }, 60_000, 'the order to be paid').catch(fail);
    expect(paid.run.steps.map((s: { name: string }) => s.name).slice(0, 3)).toEqual(['reserve', 'charge', 'markPaid']);
    expect(await http(`${url}/orders/${placed.id}/shipment`, { method: 'POST', body: { trackingNumber: 'TRACK-123' } })).toEqual({ accepted: true });
    const done = await eventually(async () => {
      const v = await http(`${url}/orders/${placed.id}`);
      return v.run.status === 'SUCCEEDED' && v.emails.length === 3 && v.emails.every((e: { sentAt: unknown }) => e.sentAt) ? v : null;
    }, 60_000, 'the run to finish (review email after 10 s)').catch(fail);
    expect(done).toMatchObject({ status: 'SHIPPED', trackingNumber: 'TRACK-123' });
    expect(done.run.output).toMatchObject({ outcome: 'SHIPPED', trackingNumber: 'TRACK-123' });

    // The dashboard's API with the token main.ts printed.
    const res = await fetch(`${url}/durable/runs?idPrefix=${placed.id}`, { headers: { authorization: `Bearer ${token}` } });
    expect(res.status).toBe(200);
    expect(((await res.json()) as { items: unknown[] }).items).toEqual([expect.objectContaining({ id: placed.id, status: 'SUCCEEDED' })]);

    const rss = execFileSync('ps', ['-o', 'rss=,args=', '-g', String(app.pid)]).toString().split('\n').find((l) => l.includes('scripts/start.mjs') && !l.includes('sh -c'));
    console.log(
      `quick start: clone + ${reuse ? 'linked node_modules' : 'npm install'} ${((installed - t0) / 1000).toFixed(1)} s; ` +
        `npm start → listening ${((listening - installed) / 1000).toFixed(1)} s (${/embedded Postgres ready in \d+ ms/.exec(output)?.[0]}); ` +
        `order done ${((Date.now() - listening) / 1000).toFixed(1)} s later; app RSS ${Math.round(Number(rss?.trim().split(/\s+/)[0]) / 1024)} MB`,
    );

    // Ctrl-C: the app shuts down, then closes the embedded database (and its lock).
    process.kill(-app.pid!, 'SIGINT');
    await new Promise((r) => (app!.exitCode !== null ? r(null) : app!.once('exit', r)));
    expect(output).toContain('SIGINT: shutting down');
    expect(existsSync(join(dir, '.data', 'pglite', 'PG_VERSION'))).toBe(true);
    expect(existsSync(join(dir, '.data', 'pglite.pid'))).toBe(false);
  }, 420_000);
});
