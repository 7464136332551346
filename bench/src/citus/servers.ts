/**
 * PostgreSQL servers the citus benchmark starts for itself, on free ports in a temporary folder: a
 * plain single server and a Citus cluster (a coordinator and worker nodes), all with the same
 * settings, so "1 node" and "coordinator + 2 workers" differ only by Citus. As root, the servers run
 * as the OS user "postgres". pg_stat_statements is loaded on every server (after citus, which must
 * come first), so the statements each node executes can be counted.
 *
 * The tests' cluster (test/support/citus-cluster.ts) is not imported: it pulls in jest's globals.
 */
import { execFile } from 'node:child_process';
import {
  appendFileSync,
  chmodSync,
  chownSync,
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import pg from 'pg';
import { freePort } from '../../../libs/durable/src/embedded-postgres/ports.js';
import { isAlive, readPostmasterPid } from '../../../libs/durable/src/embedded-postgres/postmaster-pid.js';
import { serverUser, type ServerUser } from '../../../libs/durable/src/embedded-postgres/server-user.js';

const run = promisify(execFile);
const started = new Set<number>();
process.once('exit', () => {
  for (const pid of started) if (isAlive(pid)) process.kill(pid, 'SIGKILL');
});

/** The machine's newest PostgreSQL server binaries (Debian: /usr/lib/postgresql/<version>/bin). */
export function binDir(): string {
  const root = '/usr/lib/postgresql';
  const versions = existsSync(root) ? readdirSync(root).filter((v) => existsSync(join(root, v, 'bin', 'initdb'))) : [];
  const newest = versions.sort((a, b) => Number(b) - Number(a))[0];
  if (!newest) throw new Error(`no PostgreSQL server binaries under ${root} (Debian package postgresql-15 or newer)`);
  return join(root, newest, 'bin');
}

/** Is Citus installed into the machine's PostgreSQL? */
export function citusInstalled(): boolean {
  try {
    return existsSync(join(binDir(), '..', 'lib', 'citus.so'));
  } catch {
    return false;
  }
}

/** One server: its name in the reports, port, data folder, a URL per database, its postmaster's pid once started. */
export interface BenchNode {
  name: string;
  port: number;
  dataDir: string;
  pid: number;
  url(db?: string): string;
}

/** The settings every server gets (the tests' Citus cluster's, plus pg_stat_statements). */
function settings(n: BenchNode, citus: boolean): string[] {
  return [
    `shared_preload_libraries = '${citus ? 'citus,' : ''}pg_stat_statements'`,
    `listen_addresses = '127.0.0.1'`,
    `port = ${n.port}`,
    `unix_socket_directories = '${n.dataDir}'`,
    'max_connections = 300',
    'wal_level = logical',
    'fsync = off',
    'shared_buffers = 64MB',
    'logging_collector = off',
    'pg_stat_statements.max = 10000',
    // Utility statements (BEGIN, COMMIT, PREPARE TRANSACTION, …) are not statements a node plans: left out.
    'pg_stat_statements.track_utility = off',
    ...(citus
      ? [
          `citus.node_conninfo = 'sslmode=disable'`,
          // Keep the coordinator's record of two-phase commits (pg_dist_transaction) for the run: the
          // benchmark counts them. Recovery normally deletes the rows of committed ones every minute.
          'citus.recover_2pc_interval = -1',
        ]
      : []),
    '',
  ];
}

/** A set of servers in one temporary folder: `single()` one plain server, `cluster()` a Citus coordinator + workers. */
export class BenchServers {
  readonly nodes: BenchNode[] = [];
  private template?: string;
  private stopped = false;
  private constructor(
    readonly dir: string,
    private readonly bin: string,
    private readonly user: ServerUser | undefined,
  ) {}

  static create(): BenchServers {
    const dir = mkdtempSync(join(tmpdir(), 'durable-bench-citus-'));
    chmodSync(dir, 0o755);
    return new BenchServers(dir, binDir(), serverUser());
  }

  /** Starts a server named `name` (citus: with the extension preloaded). */
  async start(name: string, citus: boolean): Promise<BenchNode> {
    const port = await freePort();
    const dataDir = join(this.dir, name);
    const n: BenchNode = { name, port, dataDir, pid: 0, url: (db = 'postgres') => `postgresql://postgres@127.0.0.1:${port}/${db}` };
    if (!this.template) {
      // One initdb, copied for the other servers.
      this.template = join(this.dir, 'template');
      mkdirSync(this.template, { mode: 0o700 });
      if (this.user) chownSync(this.template, this.user.uid, this.user.gid);
      await this.runAs('initdb', ['-D', this.template, '-U', 'postgres', '--auth=trust', '-E', 'UTF8', '--no-locale', '--no-sync']);
    }
    cpSync(this.template, dataDir, { recursive: true });
    if (this.user) this.chownTree(dataDir);
    appendFileSync(join(dataDir, 'postgresql.conf'), settings(n, citus).join('\n'));
    try {
      await this.runAs('pg_ctl', ['start', '-w', '-t', '60', '-s', '-D', dataDir, '-l', join(dataDir, 'server.log')]);
    } catch (err) {
      throw new Error(`PostgreSQL ${name} on :${port} did not start: ${(err as Error).message}\n${this.logTail(n)}`);
    }
    const pm = readPostmasterPid(dataDir);
    if (!pm) throw new Error(`PostgreSQL ${name}: no postmaster.pid`);
    n.pid = pm.pid;
    started.add(pm.pid);
    this.nodes.push(n);
    return n;
  }

  /** Stops every server (immediately) and removes the folder. Safe to call twice. */
  async stop(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    for (const n of this.nodes) {
      await this.runAs('pg_ctl', ['stop', '-m', 'immediate', '-w', '-t', '20', '-D', n.dataDir]).catch(() => undefined);
      if (isAlive(n.pid)) process.kill(n.pid, 'SIGKILL');
      started.delete(n.pid);
    }
    rmSync(this.dir, { recursive: true, force: true });
  }

  logTail(n: BenchNode, lines = 15): string {
    const f = join(n.dataDir, 'server.log');
    return existsSync(f) ? readFileSync(f, 'utf8').trimEnd().split('\n').slice(-lines).join('\n') : '(no server log)';
  }

  private chownTree(dir: string): void {
    const { uid, gid } = this.user!;
    chownSync(dir, uid, gid);
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const path = join(dir, entry.name);
      if (entry.isDirectory()) this.chownTree(path);
      else chownSync(path, uid, gid);
    }
  }

  private async runAs(tool: string, args: string[]): Promise<void> {
    await run(join(this.bin, tool), args, {
      cwd: this.dir,
      env: { ...process.env, LC_ALL: 'C', LANG: 'C' },
      timeout: 120_000,
      ...(this.user && { uid: this.user.uid, gid: this.user.gid }),
    });
  }
}

/** Runs one statement on the server at `url`. */
export async function sql<T = Record<string, unknown>>(url: string, text: string, params: unknown[] = []): Promise<T[]> {
  const c = new pg.Client({ connectionString: url, connectionTimeoutMillis: 10_000 });
  c.on('error', () => {});
  await c.connect();
  try {
    return (await c.query(text, params)).rows as T[];
  } finally {
    await c.end().catch(() => {});
  }
}
