import pg from 'pg';
import { NoPrimaryError } from '../errors/index.js';
import { errorText } from '../errors/error-text.js';
import { formatHost, type HostPort } from './postgres-hosts.js';

/** True on a standby (hot standby, or a server still replaying its WAL); false on the primary. */
export const IN_RECOVERY_SQL = 'SELECT pg_is_in_recovery() AS standby';

/** How long a probe may take to connect and answer before that host counts as down. */
const PROBE_TIMEOUT_MS = 5_000;

/**
 * Points a pg client that has not connected yet at `host`. node-postgres reads host and port from
 * its config once, in the constructor (a connection string's host wins over an explicit one), so a
 * client of a multi-host URL is aimed after it is made.
 */
export function aimAt(client: pg.Client, host: HostPort): void {
  const c = client as unknown as { host: string; port: number; connectionParameters: { host: string; port: number } };
  c.host = c.connectionParameters.host = host.host;
  c.port = c.connectionParameters.port = host.port;
}

export async function isStandby(client: pg.Client): Promise<boolean> {
  const { rows } = await client.query<{ standby: boolean }>(IN_RECOVERY_SQL);
  return rows[0]?.standby === true;
}

/**
 * Which of several servers is the primary now. The answer is remembered until a connection to it
 * finds it gone or read-only (forget()); the next caller then asks every host at once and takes
 * the first that answers as the primary. Concurrent callers share one search.
 */
export class PrimaryFinder {
  private current: HostPort | null = null;
  /** The last primary found (kept when forgotten): a search that finds another one is a failover. */
  private last: HostPort | null = null;
  private search: Promise<HostPort> | null = null;
  /** How many times a search found another primary than the last one (failovers noticed). */
  failovers = 0;

  constructor(
    readonly hosts: readonly HostPort[],
    private readonly config: pg.ClientConfig,
    /** Called with each primary found, and the one before it when a failover moved it (else null). */
    private readonly onFound: (host: HostPort, movedFrom: HostPort | null) => void = () => {},
  ) {}

  /** The primary: the one remembered (`known`: true), or the answer of a search made now. */
  async primary(): Promise<{ host: HostPort; known: boolean }> {
    if (this.current) return { host: this.current, known: true };
    this.search ??= this.find().finally(() => (this.search = null));
    return { host: await this.search, known: false };
  }

  /** `host` is no longer the primary (or no longer answers): the next connection searches again. */
  forget(host: HostPort): void {
    if (this.current && this.current.host === host.host && this.current.port === host.port) this.current = null;
  }

  private find(): Promise<HostPort> {
    const previous = this.last;
    const answers: Array<{ host: string; answer: string }> = [];
    return new Promise((resolve, reject) => {
      let pending = this.hosts.length;
      let found = false;
      for (const host of this.hosts) {
        this.probe(host)
          .then(
            (standby) => {
              answers.push({ host: formatHost(host), answer: standby ? 'a standby' : 'the primary' });
              if (!standby && !found) {
                found = true;
                this.current = this.last = host;
                const moved = previous !== null && (previous.host !== host.host || previous.port !== host.port);
                if (moved) this.failovers++;
                this.onFound(host, moved ? previous : null);
                resolve(host);
              }
            },
            (err: unknown) => answers.push({ host: formatHost(host), answer: errorText(err) }),
          )
          .finally(() => {
            if (--pending === 0 && !found) reject(new NoPrimaryError(answers));
          });
      }
    });
  }

  private async probe(host: HostPort): Promise<boolean> {
    const client = new pg.Client({ ...this.config, connectionTimeoutMillis: PROBE_TIMEOUT_MS });
    aimAt(client, host);
    client.on('error', () => {}); // a probe's connection may die any time: it only costs this answer
    try {
      await client.connect();
      return await isStandby(client);
    } finally {
      void client.end().catch(() => {});
    }
  }
}
