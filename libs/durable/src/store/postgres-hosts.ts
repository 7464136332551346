import { InvalidOptionsError } from '../errors/index.js';

/** One server of a connection URL. */
export interface HostPort {
  host: string;
  port: number;
}

/** A Postgres URL split into its servers and a single-host URL that carries everything else. */
export interface ParsedPostgresUrl {
  /** The servers, in the URL's order (one for an ordinary URL). */
  hosts: HostPort[];
  /** The URL with only the first host and without `target_session_attrs` (node-postgres parses the rest). */
  url: string;
  /** Whether every connection must land on the primary: several hosts, or `target_session_attrs=read-write|primary`. */
  primaryOnly: boolean;
}

const PREFIX = /^(postgres(?:ql)?:\/\/)(?:([^@/?#]*)@)?([^/?#]*)(.*)$/i;

/** Whether `url` is a postgres:// or postgresql:// URL (what parsePostgresUrl reads). */
export const isPostgresUrl = (url: unknown): url is string => typeof url === 'string' && PREFIX.test(url);
const DEFAULT_PORT = 5432;

/**
 * Reads a libpq-style URL, which may name several servers (`postgresql://u@db1:5432,db2:5432/app`):
 * node-postgres takes one host only, so the engine finds the primary among them itself
 * (store/primary-finder.ts). `target_session_attrs` may be `read-write` or `primary` (what the
 * engine needs anyway) or `any` with a single host; standbys cannot run the engine's writes.
 */
export function parsePostgresUrl(url: string): ParsedPostgresUrl {
  const m = PREFIX.exec(url);
  if (!m) return { hosts: [], url, primaryOnly: false };
  const [, scheme, auth, hostList, rest] = m;
  const hostTexts = hostList ? hostList.split(',') : [];
  const hosts = hostTexts.map((h) => hostPort(h, url));
  const [path, query = ''] = splitOnce(rest, '?');
  const params = new URLSearchParams(query);
  const attrs = params.get('target_session_attrs');
  if (attrs === null && hosts.length < 2) return { hosts, url, primaryOnly: false };
  params.delete('target_session_attrs');
  if (attrs !== null && !['read-write', 'primary', 'any'].includes(attrs)) {
    throw new InvalidOptionsError(
      `target_session_attrs=${attrs} in the database URL is not supported: the engine writes, so it needs the primary ` +
        `(use read-write or primary, or leave it out; with several hosts the engine always picks the primary).`,
    );
  }
  if (attrs === 'any' && hosts.length > 1) {
    throw new InvalidOptionsError(
      'target_session_attrs=any with several hosts in the database URL would let the engine write to a standby: ' +
        'leave it out (the engine then connects to whichever host is the primary).',
    );
  }
  const search = params.toString();
  return {
    hosts,
    url: `${scheme}${auth !== undefined ? `${auth}@` : ''}${hostTexts[0] ?? ''}${path}${search ? `?${search}` : ''}`,
    primaryOnly: hosts.length > 1 || attrs === 'read-write' || attrs === 'primary',
  };
}

/** `host`, `host:port`, `[v6]` or `[v6]:port`. */
function hostPort(text: string, url: string): HostPort {
  const m = /^(\[[^\]]+\]|[^:]*)(?::(\d+))?$/.exec(text.trim());
  if (!m || !m[1]) {
    throw new InvalidOptionsError(`The database URL has a host "${text}" that is not host or host:port (in ${redact(url)}).`);
  }
  const port = m[2] ? Number(m[2]) : DEFAULT_PORT;
  if (!(port > 0 && port < 65536))
    throw new InvalidOptionsError(`The database URL has a port out of range in "${text}" (in ${redact(url)}).`);
  return { host: decodeURIComponent(m[1].replace(/^\[|\]$/g, '')), port };
}

export const formatHost = (h: HostPort) => `${h.host.includes(':') ? `[${h.host}]` : h.host}:${h.port}`;

function splitOnce(s: string, sep: string): [string, string?] {
  const i = s.indexOf(sep);
  return i < 0 ? [s] : [s.slice(0, i), s.slice(i + 1)];
}

/** The URL without its password, for error messages. */
const redact = (url: string) => url.replace(/^([^:]+:\/\/[^:@/]*):[^@/]*@/, '$1:***@');
