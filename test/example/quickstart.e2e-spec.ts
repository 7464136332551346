import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync, symlinkSync, mkdirSync, readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { eventually } from '../support/engine-harness.js';
import { http } from './support/app-process.js';
import { shipmentHeaders } from './support/example-app.js';

/**
 * README "Try the example", followed literally on a fresh clone of this repository (its committed
 * HEAD, not the working tree):
 *
 *   git clone … && cd …        (a temp folder)
 *   npm install                 (run as `npm install --prefer-offline --no-audit --no-fund`: same
 *                                install, served from the npm cache when it can; ~40 s)
 *   npm start                   (no DATABASE_URL: embedded Postgres; PORT=0 so it cannot collide)
 *   the curl session            (done with fetch: stock, order, watch it, shipment webhook, admin API)
 *   Ctrl-C, npm start again     (nothing rebuilt, the same data; `prisma migrate status` agrees)
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
  // PRISMA_SCHEMA_ENGINE_BINARY, where set (Prisma cannot download its engine), is kept like any other variable.
  return { ...env, PORT: '0', NO_COLOR: '1' };
}

function run(cmd: string, args: string[], cwd: string, env: NodeJS.ProcessEnv): string {
  try {
    return execFileSync(cmd, args, { cwd, env, stdio: 'pipe', timeout: 240_000 }).toString();
  } catch (err) {
    const e = err as { stdout?: Buffer; stderr?: Buffer; message: string };
    throw new Error(`${cmd} ${args.join(' ')} failed: ${e.message}\n${e.stdout ?? ''}\n${e.stderr ?? ''}`);
  }
}

/** node_modules as links to this checkout's packages, except the workspace link to the clone's own library. */
function linkNodeModules(clone: string): void {
  mkdirSync(join(clone, 'node_modules'));
  for (const name of readdirSync(join(repo, 'node_modules'))) {
    if (name === 'nestjs-durable' || name === '.cache') continue; // the clone's own link; caches stay the clone's
    symlinkSync(join(repo, 'node_modules', name), join(clone, 'node_modules', name));
  }
  symlinkSync(join('..', 'libs', 'durable'), join(clone, 'node_modules', 'nestjs-durable'));
}

/** `npm start` in the clone, in its own process group (Ctrl-C goes to the group, as in a terminal). */
class NpmStart {
  output = '';
  readonly child: ChildProcess;
  constructor(cwd: string, env: NodeJS.ProcessEnv) {
    this.child = spawn('npm', ['start'], { cwd, env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
    this.child.stdout!.on('data', (d) => (this.output += d));
    this.child.stderr!.on('data', (d) => (this.output += d));
  }
  get running() {
    return this.child.exitCode === null && this.child.signalCode === null;
  }
  fail = (err: Error): never => {
    throw new Error(`${err.message}\n--- npm start output:\n${this.output}`);
  };
  async url(): Promise<string> {
    const url = await eventually(
      async () => {
        if (!this.running) throw new Error(`npm start exited with ${this.child.exitCode ?? this.child.signalCode}`);
        return /example shop on (http:\/\/\S+)/.exec(this.output)?.[1];
      },
      240_000,
      'npm start to listen',
    ).catch(this.fail);
    return url!;
  }
  async signal(signal: NodeJS.Signals): Promise<void> {
    const exited = new Promise((r) => (this.running ? this.child.once('exit', r) : r(null)));
    if (this.running) process.kill(-this.child.pid!, signal);
    await exited;
  }
}

/** The embedded server of the clone, from its postmaster.pid; null when none runs. */
function embeddedServerPid(dir: string): number | null {
  try {
    const pid = Number(readFileSync(join(dir, '.data', 'postgres', 'postmaster.pid'), 'utf8').split('\n')[0]);
    process.kill(pid, 0);
    return pid;
  } catch {
    return null;
  }
}

/** RSS in MB of a process, and of its children when `withChildren`. */
function rssMb(pid: number, withChildren = false): number {
  const args = ['-o', 'rss=', '-p', String(pid), ...(withChildren ? ['--ppid', String(pid)] : [])];
  const kb = execFileSync('ps', args)
    .toString()
    .trim()
    .split(/\s+/)
    .map(Number)
    .reduce((a, b) => a + b, 0);
  return Math.round(kb / 1024);
}

describe('README quick start on a fresh clone (embedded Postgres, no DATABASE_URL)', () => {
  let dir: string;
  let app: NpmStart | undefined;

  afterAll(async () => {
    await app?.signal('SIGKILL');
    // A failed run may leave the clone's embedded server running (it outlives npm start by design).
    const pid = dir && embeddedServerPid(dir);
    if (pid) {
      process.kill(pid, 'SIGQUIT');
      await eventually(async () => embeddedServerPid(dir) === null, 30_000, 'the embedded Postgres to stop');
    }
    if (dir && process.env.QUICKSTART_KEEP !== '1') rmSync(dir, { recursive: true, force: true });
  });

  it('git clone → npm install → npm start → order placed, paid, shipped, reviewed; Ctrl-C; npm start again', async () => {
    const env = userEnv();
    const t0 = Date.now();
    dir = mkdtempSync(join(tmpdir(), 'durable-quickstart-'));
    // mkdtemp makes the folder 0700, a clone is 0755: run as root, the embedded Postgres runs as
    // the OS user "postgres", which has to get in (docs/operations.md, "Embedded Postgres for development").
    chmodSync(dir, 0o755);
    run('git', ['clone', '--quiet', repo, dir], tmpdir(), env);
    if (reuse) linkNodeModules(dir);
    else run('npm', ['install', '--prefer-offline', '--no-audit', '--no-fund'], dir, env);
    const installed = Date.now();

    const started = (app = new NpmStart(dir, env));
    const url = await started.url();
    const listening = Date.now();
    expect(app.output).toMatch(/embedded Postgres created and started in \d+ ms/);

    // The curl session of the README.
    const stock = await http<Array<{ sku: string }>>(`${url}/stock`);
    expect(stock.map((s) => s.sku)).toContain('grinder');
    const placed = await http(`${url}/orders`, {
      method: 'POST',
      body: { customer: 'Ada', email: 'ada@example.com', sku: 'grinder', quantity: 1 },
    });
    expect(placed).toMatchObject({ status: 'NEW', amount: 12_900 });
    const paid = await eventually(
      async () => {
        const v = await http(`${url}/orders/${placed.id}`);
        return v.status === 'PAID' ? v : null;
      },
      60_000,
      'the order to be paid',
    ).catch(app.fail);
    expect(paid.run.steps.map((s: { name: string }) => s.name).slice(0, 3)).toEqual(['reserve', 'charge', 'markPaid']);
    // The webhook is signed with the secret main.ts printed (made up, as no SHIPMENT_WEBHOOK_SECRET is set).
    const secret = await eventually(
      async () => /shipment webhook secret: (\S+)/.exec(started.output)?.[1],
      5_000,
      'the webhook secret line',
    );
    const shipment = { trackingNumber: 'TRACK-123' };
    expect(
      await http(`${url}/orders/${placed.id}/shipment`, {
        method: 'POST',
        body: shipment,
        headers: shipmentHeaders(placed.id, shipment, secret),
      }),
    ).toEqual({ accepted: true });
    const done = await eventually(
      async () => {
        const v = await http(`${url}/orders/${placed.id}`);
        return v.run.status === 'SUCCEEDED' && v.emails.length === 3 && v.emails.every((e: { sentAt: unknown }) => e.sentAt) ? v : null;
      },
      60_000,
      'the run to finish (review email after 10 s)',
    ).catch(app.fail);
    expect(done).toMatchObject({ status: 'SHIPPED', trackingNumber: 'TRACK-123' });
    expect(done.run.output).toMatchObject({ outcome: 'SHIPPED', trackingNumber: 'TRACK-123' });

    // The dashboard's API with the token main.ts printed (on the line after the URL: it may arrive
    // in a later chunk of the output than the one app.url() resolved on).
    const token = await eventually(async () => /\(token: ([^\s,)]+)/.exec(started.output)?.[1], 5_000, 'the admin token line');
    const res = await fetch(`${url}/durable/runs?idPrefix=${placed.id}`, { headers: { authorization: `Bearer ${token}` } });
    expect(res.status).toBe(200);
    expect(((await res.json()) as { items: unknown[] }).items).toEqual([expect.objectContaining({ id: placed.id, status: 'SUCCEEDED' })]);

    // The embedded database is a real server: Prisma's CLI agrees that the migrations are applied.
    const [ready, dbUrl] = /embedded Postgres created and started in \d+ ms: (postgresql:\/\/\S+)/.exec(app.output)!;
    expect(run('npm', ['run', 'prisma', '--', 'migrate', 'status'], dir, { ...env, DATABASE_URL: dbUrl })).toContain(
      'Database schema is up to date',
    );

    const serverPid = embeddedServerPid(dir)!;
    const startPid = Number(
      execFileSync('ps', ['-o', 'pid=,args=', '-g', String(app.child.pid)])
        .toString()
        .split('\n')
        .find((l) => l.includes('scripts/start.mjs') && !l.includes('sh -c'))
        ?.trim()
        .split(/\s+/)[0],
    );
    const memory = `app RSS ${rssMb(startPid)} MB + Postgres ${rssMb(serverPid, true)} MB`;
    const firstStart = (listening - installed) / 1000;
    const orderDone = (Date.now() - listening) / 1000;

    // Ctrl-C: the app shuts down, then stops the embedded server (it was its only user).
    await app.signal('SIGINT');
    expect(app.output).toContain('SIGINT: shutting down');
    expect(app.output).toContain('embedded Postgres stopped');
    expect(existsSync(join(dir, '.data', 'postgres', 'PG_VERSION'))).toBe(true);
    expect(embeddedServerPid(dir)).toBeNull();
    expect(existsSync(join(dir, '.data', 'postgres.lock'))).toBe(false);

    // npm start again, nothing changed: nothing is rebuilt, the order is still there.
    const restarted = Date.now();
    app = new NpmStart(dir, env);
    const url2 = await app.url();
    const restart = (Date.now() - restarted) / 1000;
    expect(app.output).toContain('[start] Prisma client: unchanged');
    expect(app.output).toContain('[start] library (libs/durable): unchanged');
    expect(app.output).toMatch(/embedded Postgres started in \d+ ms/);
    expect(await http(`${url2}/orders/${placed.id}`)).toMatchObject({ status: 'SHIPPED', run: { status: 'SUCCEEDED' } });
    await app.signal('SIGINT');
    expect(app.output).toContain('embedded Postgres stopped');

    console.log(
      `quick start: clone + ${reuse ? 'linked node_modules' : 'npm install'} ${((installed - t0) / 1000).toFixed(1)} s; ` +
        `npm start → listening ${firstStart.toFixed(1)} s (${ready.replace(/: postgresql.*/, '')}); ` +
        `order done ${orderDone.toFixed(1)} s later; ${memory}; restart with no change → listening ${restart.toFixed(1)} s`,
    );
  }, 480_000);
});
