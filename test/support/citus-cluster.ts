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
import { applyMigrations } from '../../libs/durable/src/embedded-postgres/migrations.js';
import { freePort } from '../../libs/durable/src/embedded-postgres/ports.js';
import { isAlive, readPostmasterPid } from '../../libs/durable/src/embedded-postgres/postmaster-pid.js';
import { serverUser, type ServerUser } from '../../libs/durable/src/embedded-postgres/server-user.js';
import { distribute } from '../../libs/durable/src/store/distribution.js';
import { partitionSchema } from '../../libs/durable/src/store/partitions.js';
import { pgSqlClient } from '../../libs/durable/src/store/sql-client.js';
import { TEST_TABLES } from './global-setup.js';
import { binDir, type PgNode } from './pg-cluster.js';
import type { TestDatabase } from './db.js';

const run = promisify(execFile);
const started = new Set<number>();
process.once('exit', () => {
  for (const pid of started) if (isAlive(pid)) process.kill(pid, 'SIGKILL');
});

/** Is Citus installed into the machine's PostgreSQL server (`../citus/install.sh` on the CI machine)? */
export function citusInstalled(): boolean {
  try {
    return existsSync(join(binDir(), '..', 'lib', 'citus.so'));
  } catch {
    return false;
  }
}

/** A describe() of the Citus tests: skipped where Citus is not installed, unless DURABLE_REQUIRE_CITUS=1 (CI), where CitusCluster.start() then fails. */
export const describeCitus = citusInstalled() || process.env.DURABLE_REQUIRE_CITUS === '1' ? describe : describe.skip;

/** SQL counting, over every partition's runs, those `where` selects: `SELECT count(*)::int AS n …`. */
export function countRuns(partitions: number, where: string): string {
  const each = Array.from({ length: partitions }, (_, k) => `SELECT 1 FROM ${partitionSchema(k)}.durable_runs WHERE ${where}`);
  return `SELECT count(*)::int AS n FROM (${each.join(' UNION ALL ')}) s`;
}

/**
 * A Citus cluster on this machine for the distributed-mode tests: a coordinator and `workers` worker
 * nodes, each a PostgreSQL server with `shared_preload_libraries = 'citus'` on a free port, in a
 * temporary folder that stop() removes. As root, the servers run as the OS user "postgres".
 */
export class CitusCluster {
  private stopped = false;

  private constructor(
    readonly dir: string,
    private readonly bin: string,
    private readonly user: ServerUser | undefined,
    readonly coordinator: PgNode,
    readonly workers: PgNode[],
  ) {}

  static async start(opts: { workers?: number } = {}): Promise<CitusCluster> {
    if (!citusInstalled()) throw new Error('DURABLE_REQUIRE_CITUS=1 but Citus is not installed into PostgreSQL: run citus/install.sh');
    const bin = binDir();
    const dir = mkdtempSync(join(tmpdir(), 'durable-citus-'));
    chmodSync(dir, 0o755);
    const node = async (name: string): Promise<PgNode> => {
      const port = await freePort();
      return { port, dataDir: join(dir, name), url: (db = 'postgres') => `postgresql://postgres@127.0.0.1:${port}/${db}` };
    };
    const workers = await Promise.all(Array.from({ length: opts.workers ?? 2 }, (_, i) => node(`worker${i + 1}`)));
    const cluster = new CitusCluster(dir, bin, serverUser(), await node('coordinator'), workers);
    try {
      // One initdb, copied for the other nodes (a copy costs a fraction of an initdb's CPU).
      await cluster.initNode(cluster.coordinator, null);
      await Promise.all(workers.map((n) => cluster.initNode(n, cluster.coordinator)));
      return cluster;
    } catch (err) {
      await cluster.stop();
      throw err;
    }
  }

  /**
   * A database `name` on every node with the Citus extension, the workers added to the coordinator's
   * metadata, the durable tables migrated, the tests' own tables, and distributed mode set up with
   * `partitions` partitions (none: left a single server's tables). Resolves to it on the coordinator
   * (the address the app uses).
   */
  async database(name: string, partitions: number | null): Promise<TestDatabase> {
    for (const n of [this.coordinator, ...this.workers]) {
      await this.sql(n.url(), `CREATE DATABASE ${name}`);
      await this.sql(n.url(name), 'CREATE EXTENSION citus');
    }
    const url = this.coordinator.url(name);
    await this.sql(url, `SELECT citus_set_coordinator_host('127.0.0.1', ${this.coordinator.port})`);
    for (const w of this.workers) await this.sql(url, `SELECT citus_add_node('127.0.0.1', ${w.port})`);
    await applyMigrations(url, join(process.cwd(), 'prisma', 'migrations'));
    await this.sql(url, TEST_TABLES);
    if (partitions !== null) await this.distribute(url, partitions);
    return { name, url, drop: async () => {} };
  }

  /** Sets up distributed mode on the database at `url` (the coordinator's), as `npx nestjs-durable distribute` does. */
  async distribute(url: string, partitions: number): Promise<void> {
    const c = new pg.Client({ connectionString: url });
    await c.connect();
    try {
      await distribute(pgSqlClient(c, { prepared: false }), partitions);
    } finally {
      await c.end().catch(() => {});
    }
  }

  /** Runs one statement on the node at `url`. */
  async sql<T = Record<string, unknown>>(url: string, text: string, params: unknown[] = []): Promise<T[]> {
    const c = new pg.Client({ connectionString: url, connectionTimeoutMillis: 5_000 });
    c.on('error', () => {});
    await c.connect();
    try {
      return (await c.query(text, params)).rows as T[];
    } finally {
      await c.end().catch(() => {});
    }
  }

  /** Stops every node (immediately) and removes the folder. Safe to call twice. */
  async stop(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    for (const n of [...this.workers, this.coordinator]) {
      const pm = existsSync(n.dataDir) ? readPostmasterPid(n.dataDir) : null;
      if (!pm) continue;
      await this.runAs('pg_ctl', ['stop', '-m', 'immediate', '-w', '-t', '20', '-D', n.dataDir]).catch(() => undefined);
      if (isAlive(pm.pid)) process.kill(pm.pid, 'SIGKILL');
      started.delete(pm.pid);
    }
    rmSync(this.dir, { recursive: true, force: true });
  }

  /** The tail of a node's server log (for a failed test's message). */
  logTail(n: PgNode, lines = 15): string {
    const f = join(n.dataDir, 'server.log');
    return existsSync(f) ? readFileSync(f, 'utf8').trimEnd().split('\n').slice(-lines).join('\n') : '(no server log)';
  }

  /** Creates node n's data folder (initdb, or a copy of `from`'s, made before it started), configures and starts it. */
  private async initNode(n: PgNode, from: PgNode | null): Promise<void> {
    if (from) {
      cpSync(from.dataDir + '.template', n.dataDir, { recursive: true });
    } else {
      mkdirSync(n.dataDir, { mode: 0o700 });
      if (this.user) chownSync(n.dataDir, this.user.uid, this.user.gid);
      await this.runAs('initdb', ['-D', n.dataDir, '-U', 'postgres', '--auth=trust', '-E', 'UTF8', '--no-locale', '--no-sync']);
      cpSync(n.dataDir, n.dataDir + '.template', { recursive: true });
    }
    if (this.user) this.chownTree(n.dataDir);
    appendFileSync(
      join(n.dataDir, 'postgresql.conf'),
      [
        `shared_preload_libraries = 'citus'`,
        `listen_addresses = '127.0.0.1'`,
        `port = ${n.port}`,
        `unix_socket_directories = '${n.dataDir}'`,
        'max_connections = 300',
        // The nodes talk to each other without TLS (the servers run with root's HOME, where libpq looks for certificates).
        `citus.node_conninfo = 'sslmode=disable'`,
        // Shard moves copy with logical replication.
        'wal_level = logical',
        'fsync = off',
        'shared_buffers = 64MB',
        'logging_collector = off',
        '',
      ].join('\n'),
    );
    try {
      await this.runAs('pg_ctl', ['start', '-w', '-t', '60', '-s', '-D', n.dataDir, '-l', join(n.dataDir, 'server.log')]);
    } catch (err) {
      throw new Error(`PostgreSQL (Citus) on :${n.port} did not start: ${(err as Error).message}\n${this.logTail(n)}`);
    }
    const pm = readPostmasterPid(n.dataDir);
    if (pm) started.add(pm.pid);
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
