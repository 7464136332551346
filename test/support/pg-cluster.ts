import { execFile, execFileSync } from 'node:child_process';
import { chmodSync, chownSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, appendFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { promisify } from 'node:util';
import pg from 'pg';
import { freePort } from '../../libs/durable/src/embedded-postgres/ports.js';
import { isAlive, readPostmasterPid } from '../../libs/durable/src/embedded-postgres/postmaster-pid.js';
import { serverUser, type ServerUser } from '../../libs/durable/src/embedded-postgres/server-user.js';

/** One server of a PgCluster. */
export interface PgNode {
  port: number;
  dataDir: string;
  url(db?: string): string;
}

/** The machine's PostgreSQL binaries (Debian: /usr/lib/postgresql/<version>/bin, package postgresql-<version>). */
export function binDir(): string {
  const root = '/usr/lib/postgresql';
  const versions = existsSync(root) ? readdirSync(root).filter((v) => existsSync(join(root, v, 'bin', 'pg_basebackup'))) : [];
  const newest = versions.sort((a, b) => Number(b) - Number(a))[0];
  if (!newest) throw new Error(`No PostgreSQL server binaries under ${root}: install the Debian package postgresql-15 (or newer).`);
  return join(root, newest, 'bin');
}

const run = promisify(execFile);

/**
 * Whether a process still runs. One that exited but is not reaped yet (its parent died, and PID 1
 * may take a while to reap orphans) still answers kill(pid, 0): its /proc state is then Z.
 */
function running(pid: number): boolean {
  if (!isAlive(pid)) return false;
  try {
    return readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.[0] !== 'Z';
  } catch {
    return false;
  }
}
/** Every postmaster a cluster of this process started, killed if the process exits without stopping them. */
const started = new Set<number>();
process.once('exit', () => {
  for (const pid of started) if (isAlive(pid)) process.kill(pid, 'SIGKILL');
});

/**
 * A PostgreSQL primary and a streaming standby on free ports, in a temporary folder, for the
 * failover tests: both started, the standby streaming (synchronously by default: a commit returns
 * once the standby has flushed it), the primary killable with SIGKILL, the standby promotable.
 * As root, the servers run as the OS user "postgres" (Postgres refuses to run as root).
 */
export class PgCluster {
  private stopped = false;

  private constructor(
    /** The folder that holds both servers' data. */
    readonly dir: string,
    private readonly bin: string,
    private readonly user: ServerUser | undefined,
    readonly primary: PgNode,
    readonly standby: PgNode,
    private readonly log: (line: string) => void,
  ) {}

  static async start(opts: { synchronous?: boolean; log?: (line: string) => void } = {}): Promise<PgCluster> {
    const log = opts.log ?? (() => {});
    const bin = binDir();
    const user = serverUser();
    const dir = mkdtempSync(join(tmpdir(), 'durable-failover-'));
    chmodSync(dir, 0o755);
    const node = async (name: string): Promise<PgNode> => {
      const port = await freePort();
      return { port, dataDir: join(dir, name), url: (db = 'postgres') => `postgresql://postgres@127.0.0.1:${port}/${db}` };
    };
    const cluster = new PgCluster(dir, bin, user, await node('primary'), await node('standby'), log);
    try {
      const t0 = Date.now();
      await cluster.initPrimary();
      await cluster.cloneStandby();
      await cluster.waitForStreaming();
      if (opts.synchronous !== false) await cluster.makeSynchronous();
      log(`primary :${cluster.primary.port} and standby :${cluster.standby.port} ready in ${Date.now() - t0} ms`);
      return cluster;
    } catch (err) {
      await cluster.stop();
      throw err;
    }
  }

  /** A libpq-style URL naming both servers, the primary first. */
  url(db = 'postgres'): string {
    return `postgresql://postgres@127.0.0.1:${this.primary.port},127.0.0.1:${this.standby.port}/${db}`;
  }

  /** SIGKILL of the primary's postmaster, as in a crash: its backends go too, so every client sees its connection end. Resolves with the time of the kill. */
  async killPrimary(): Promise<number> {
    const pm = readPostmasterPid(this.primary.dataDir);
    if (!pm) throw new Error('the primary is not running');
    const children = this.childrenOf(pm.pid);
    process.kill(pm.pid, 'SIGKILL');
    const killedAt = Date.now();
    // Backends notice their postmaster's death and exit; whatever lingers is killed like it.
    for (const until = Date.now() + 3_000; children.some(running) && Date.now() < until;) await delay(50);
    for (const pid of children.filter(running)) process.kill(pid, 'SIGKILL');
    started.delete(pm.pid);
    this.log(`primary :${this.primary.port} killed (postmaster ${pm.pid} and ${children.length} children)`);
    return killedAt;
  }

  /** Promotes the standby; resolves once it accepts writes. */
  async promoteStandby(): Promise<void> {
    await this.pgCtl(['promote', '-w', '-t', '60', '-D', this.standby.dataDir]);
    for (const until = Date.now() + 30_000; ; await delay(100)) {
      if ((await this.sql(this.standby, 'SELECT pg_is_in_recovery() AS r').catch(() => [{ r: true }]))[0].r === false) break;
      if (Date.now() > until) throw new Error(`the standby :${this.standby.port} is still in recovery 30 s after pg_ctl promote`);
    }
    this.log(`standby :${this.standby.port} promoted`);
  }

  /**
   * Starts the killed primary's data folder again, alone, on a free port that no client knows (crash
   * recovery replays its WAL: it then holds everything it ever acknowledged), runs `fn` with a URL to
   * database `db` there, and stops it. What it holds and the new primary lacks is what the failover lost.
   */
  async inspectOldPrimary<T>(db: string, fn: (url: string) => Promise<T>): Promise<T> {
    if (readPostmasterPid(this.primary.dataDir)) throw new Error('the old primary still runs: kill it first');
    // Its lock file names a dead postmaster, which may linger as a zombie (nothing reaps a process pg_ctl
    // detached when PID 1 does not): Postgres would take it for a running server and refuse to start.
    rmSync(join(this.primary.dataDir, 'postmaster.pid'), { force: true });
    const port = await freePort();
    // No standby will ever answer it: without this, a commit would wait for one (nothing commits here; it only reads).
    await this.pgCtl([
      'start',
      '-w',
      '-t',
      '60',
      '-s',
      '-D',
      this.primary.dataDir,
      '-l',
      join(this.primary.dataDir, 'inspect.log'),
      '-o',
      `-p ${port} -c synchronous_standby_names=''`,
    ]);
    const pm = readPostmasterPid(this.primary.dataDir);
    if (pm) started.add(pm.pid);
    try {
      return await fn(`postgresql://postgres@127.0.0.1:${port}/${db}`);
    } finally {
      await this.pgCtl(['stop', '-m', 'immediate', '-w', '-t', '20', '-D', this.primary.dataDir]).catch(() => undefined);
      if (pm) started.delete(pm.pid);
    }
  }

  /** Bytes of WAL the primary has written that the standby has not replayed yet (null without a standby). */
  async replicationLagBytes(): Promise<number | null> {
    const rows = await this.sql<{ lag: string | null }>(
      this.primary,
      'SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), replay_lsn)::bigint AS lag FROM pg_stat_replication LIMIT 1',
    );
    return rows[0]?.lag == null ? null : Number(rows[0].lag);
  }

  /** Leaves the servers running when this process exits (for inspection after a failed run). */
  keep(): void {
    for (const n of [this.primary, this.standby]) {
      const pm = existsSync(n.dataDir) ? readPostmasterPid(n.dataDir) : null;
      if (pm) started.delete(pm.pid);
    }
  }

  /** The standby's postmaster pid (the new primary after a promotion), or null if it is not running. */
  standbyPid(): number | null {
    return readPostmasterPid(this.standby.dataDir)?.pid ?? null;
  }

  /** Stops both servers (immediately) and removes the folder. Safe to call twice. */
  async stop(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    for (const n of [this.standby, this.primary]) {
      const pm = existsSync(n.dataDir) ? readPostmasterPid(n.dataDir) : null;
      if (!pm) continue;
      const children = this.childrenOf(pm.pid);
      await this.pgCtl(['stop', '-m', 'immediate', '-w', '-t', '20', '-D', n.dataDir]).catch(() => undefined);
      for (const pid of [pm.pid, ...children]) if (isAlive(pid)) process.kill(pid, 'SIGKILL');
      started.delete(pm.pid);
    }
    rmSync(this.dir, { recursive: true, force: true });
  }

  private async initPrimary(): Promise<void> {
    const d = this.primary.dataDir;
    this.ownedDir(d);
    await this.runAs('initdb', ['-D', d, '-U', 'postgres', '--auth=trust', '-E', 'UTF8', '--no-locale', '--no-sync']);
    appendFileSync(
      join(d, 'postgresql.conf'),
      [
        `listen_addresses = '127.0.0.1'`,
        `port = ${this.primary.port}`,
        `unix_socket_directories = '${d}'`,
        'max_connections = 300',
        'wal_level = replica',
        'max_wal_senders = 10',
        'hot_standby = on',
        `wal_keep_size = '256MB'`,
        'fsync = off',
        'shared_buffers = 64MB',
        `wal_sender_timeout = '10s'`,
        `wal_receiver_timeout = '10s'`,
        `logging_collector = off`,
        '',
      ].join('\n'),
    );
    appendFileSync(join(d, 'pg_hba.conf'), 'host all all 127.0.0.1/32 trust\nhost replication all 127.0.0.1/32 trust\n');
    await this.startNode(this.primary);
  }

  private async cloneStandby(): Promise<void> {
    const d = this.standby.dataDir;
    this.ownedDir(d);
    await this.runAs('pg_basebackup', [
      '-h',
      '127.0.0.1',
      '-p',
      String(this.primary.port),
      '-U',
      'postgres',
      '-D',
      d,
      '-R',
      '-X',
      'stream',
      '-c',
      'fast',
    ]);
    // The copy has the primary's settings: give it its own port and socket folder.
    appendFileSync(join(d, 'postgresql.auto.conf'), `port = ${this.standby.port}\nunix_socket_directories = '${d}'\n`);
    await this.startNode(this.standby);
  }

  private async waitForStreaming(): Promise<void> {
    for (const until = Date.now() + 30_000; ; await delay(100)) {
      const rows = await this.sql<{ state: string }>(this.primary, 'SELECT state FROM pg_stat_replication');
      if (rows.some((r) => r.state === 'streaming')) return;
      if (Date.now() > until) throw new Error(`the standby does not stream after 30 s:\n${this.logTail(this.standby)}`);
    }
  }

  /** Only now (a standby streams): with synchronous_standby_names set and no standby, every commit would wait. */
  private async makeSynchronous(): Promise<void> {
    await this.sql(this.primary, `ALTER SYSTEM SET synchronous_standby_names = '*'`);
    await this.sql(this.primary, 'SELECT pg_reload_conf()');
    for (const until = Date.now() + 30_000; ; await delay(100)) {
      const rows = await this.sql<{ sync_state: string }>(this.primary, 'SELECT sync_state FROM pg_stat_replication');
      if (rows.some((r) => r.sync_state === 'sync')) return;
      if (Date.now() > until) throw new Error('the standby did not become synchronous within 30 s');
    }
  }

  private async startNode(n: PgNode): Promise<void> {
    try {
      await this.pgCtl(['start', '-w', '-t', '60', '-s', '-D', n.dataDir, '-l', join(n.dataDir, 'server.log')]);
    } catch (err) {
      throw new Error(`PostgreSQL on :${n.port} did not start: ${(err as Error).message}\n${this.logTail(n)}`);
    }
    const pm = readPostmasterPid(n.dataDir);
    if (pm) started.add(pm.pid);
  }

  private pgCtl(args: string[]): Promise<unknown> {
    return this.runAs('pg_ctl', args);
  }

  /** Runs one of the server binaries as the server's user, in a folder that user may enter. */
  private async runAs(tool: string, args: string[]): Promise<void> {
    await run(join(this.bin, tool), args, {
      cwd: this.dir,
      env: { ...process.env, LC_ALL: 'C', LANG: 'C' },
      timeout: 120_000,
      ...(this.user && { uid: this.user.uid, gid: this.user.gid }),
    });
  }

  private ownedDir(d: string): void {
    mkdirSync(d, { mode: 0o700 });
    if (this.user) chownSync(d, this.user.uid, this.user.gid);
  }

  private childrenOf(pid: number): number[] {
    try {
      return execFileSync('pgrep', ['-P', String(pid)], { encoding: 'utf8' })
        .split('\n')
        .filter(Boolean)
        .map(Number);
    } catch {
      return []; // pgrep exits 1 when there is none
    }
  }

  private async sql<T = Record<string, unknown>>(n: PgNode, text: string): Promise<T[]> {
    const c = new pg.Client({ connectionString: n.url(), connectionTimeoutMillis: 5_000 });
    c.on('error', () => {});
    await c.connect();
    try {
      return (await c.query(text)).rows as T[];
    } finally {
      await c.end().catch(() => {});
    }
  }

  private logTail(n: PgNode): string {
    const f = join(n.dataDir, 'server.log');
    return existsSync(f) ? readFileSync(f, 'utf8').trimEnd().split('\n').slice(-15).join('\n') : '(no server log)';
  }
}
