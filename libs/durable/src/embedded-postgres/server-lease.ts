import pg from 'pg';

/** Advisory lock key (two int4) that every process using the embedded server holds shared. */
const KEY: number[] = [0x64757261, 0x626c6531]; // 'dura' 'ble1'

/**
 * How the processes that share one embedded server agree on who stops it: each holds the same
 * advisory lock in SHARED mode on a session of its own for as long as it uses the server (a
 * process that dies drops its session, and with it its share). The one that can take the lock
 * exclusively on its way out is the last user, and stops the server. Callers serialize leaving
 * with the startup lock, so two processes leaving at once cannot both see the other.
 */
export class ServerLease {
  private constructor(private readonly client: pg.Client) {}

  static async acquire(url: string): Promise<ServerLease> {
    const client = new pg.Client({ connectionString: url, application_name: `durable-example pid ${process.pid}` });
    // A server stopped under us (by hand) ends this connection: nothing to do about it here.
    client.on('error', () => {});
    await client.connect();
    await client.query('SELECT pg_advisory_lock_shared($1, $2)', KEY);
    return new ServerLease(client);
  }

  /** Gives the share back. Returns the pids of the other processes that still hold one (empty: this was the last). */
  async release(): Promise<number[]> {
    try {
      const { rows } = await this.client.query<{ last: boolean }>('SELECT pg_try_advisory_lock($1, $2) AS last', KEY);
      if (rows[0].last) return [];
      const others = await this.client.query<{ name: string }>(
        `SELECT a.application_name AS name FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
          WHERE l.locktype = 'advisory' AND l.classid = $1 AND l.objid = $2 AND l.objsubid = 2 AND l.granted AND l.pid <> pg_backend_pid()`,
        KEY,
      );
      await this.client.query('SELECT pg_advisory_unlock_shared($1, $2)', KEY);
      return others.rows.map((r) => Number(/pid (\d+)$/.exec(r.name)?.[1] ?? 0));
    } catch {
      return []; // the server is gone already
    } finally {
      await this.client.end().catch(() => {});
    }
  }
}
