import type { CanActivate, Type } from '@nestjs/common';
import { InvalidOptionsError } from '../../errors/index.js';
import { isPostgresUrl, parsePostgresUrl } from '../../store/postgres-hosts.js';
import { defaultActor, type ActorResolver } from './request-actor.js';

/** `DurableModule.forRoot({ admin })`: the admin API and dashboard. Off unless set. */
export interface DurableAdminOptions {
  /** Where the API and the dashboard are mounted (after the app's global prefix). Default "durable". */
  path?: string;
  /** Guards that protect every admin endpoint (classes resolved in the app, or instances). */
  guards?: Array<Type<CanActivate> | CanActivate>;
  /**
   * Serve the admin API without any guard. Only for local development: anyone who reaches the
   * app can then read every run's input and output and cancel, resume or fork runs.
   */
  unsafeNoGuard?: boolean;
  /** Serve the dashboard page at GET {path}/ (default true). Its data comes from the guarded API. */
  dashboard?: boolean;
  /**
   * Who acts, from the request (after the guards): recorded in the history of runs cancelled,
   * resumed or forked through the API. Default: the request's `user` (a string, or its id, sub,
   * username, email or name), else "admin API".
   */
  actor?: ActorResolver;
  /**
   * Key (at least 32 characters) of the HMAC that signs bulk-action tokens. Default: a random key
   * made at boot, so tokens do not survive a restart and are refused by another instance behind
   * the same load balancer: set the same secret on every instance to confirm a bulk action anywhere.
   */
  bulkTokenSecret?: string;
  /**
   * The app is behind a reverse proxy that sets X-Forwarded-Host: the same-origin check of admin
   * actions then also accepts an Origin equal to that header (default false: only Host counts).
   */
  trustProxy?: boolean;
  /** Live-update (SSE) connections this instance serves at once; past it, 503 with Retry-After (default 100). */
  maxLiveConnections?: number;
  /**
   * A read replica (a hot standby of the app's database; a URL may name several hosts): the runs
   * list with its counts, the statistics, charts and versions are read there, and the statistics
   * show its lag. Run details, actions, bulk actions, schedules and flow control stay on the primary.
   */
  readReplicaUrl?: string;
}

export interface ResolvedAdminOptions {
  path: string;
  guards: Array<Type<CanActivate> | CanActivate>;
  unsafeNoGuard: boolean;
  dashboard: boolean;
  actor: ActorResolver;
  bulkTokenSecret: string | undefined;
  trustProxy: boolean;
  maxLiveConnections: number;
  readReplicaUrl: string | undefined;
}

const PATH_RE = /^[A-Za-z0-9._~-]+(\/[A-Za-z0-9._~-]+)*$/;

/** Checks the admin options when the module is defined (at boot, before anything listens). */
export function resolveAdminOptions(o: DurableAdminOptions): ResolvedAdminOptions {
  if (typeof o !== 'object' || o === null || Array.isArray(o)) {
    throw new InvalidOptionsError('DurableModule option `admin` must be an object, e.g. { admin: { guards: [AdminGuard] } }.');
  }
  const raw = o.path ?? 'durable';
  const path = typeof raw === 'string' ? raw.replace(/^\/+|\/+$/g, '') : '';
  if (!PATH_RE.test(path)) {
    throw new InvalidOptionsError(
      `DurableModule option admin.path must be a URL path such as "/durable" or "/ops/durable" (letters, digits, ".", "_", "~", "-" ` +
        `and "/"), got ${JSON.stringify(raw)}.`,
    );
  }
  const guards = o.guards ?? [];
  if (
    !Array.isArray(guards) ||
    guards.some((g) => !g || (typeof g !== 'function' && typeof (g as CanActivate).canActivate !== 'function'))
  ) {
    throw new InvalidOptionsError(
      'DurableModule option admin.guards must be an array of guard classes or instances (objects with canActivate()).',
    );
  }
  if (!guards.length && o.unsafeNoGuard !== true) {
    throw new InvalidOptionsError(
      'DurableModule admin API enabled without a guard: anyone who can reach the app could read every run and cancel, resume ' +
        'or fork runs. Pass your auth guard(s): `admin: { guards: [AdminGuard] }`; or, for local development only, opt in ' +
        'explicitly with `admin: { unsafeNoGuard: true }`.',
    );
  }
  if (o.actor !== undefined && typeof o.actor !== 'function') {
    throw new InvalidOptionsError(
      'DurableModule option admin.actor must be a function (request) => string naming who acts, e.g. (req) => req.user?.email.',
    );
  }
  if (o.bulkTokenSecret !== undefined && (typeof o.bulkTokenSecret !== 'string' || o.bulkTokenSecret.length < 32)) {
    throw new InvalidOptionsError(
      'DurableModule option admin.bulkTokenSecret must be a string of at least 32 characters (e.g. 32 random bytes in hex, from your secret store).',
    );
  }
  if (o.trustProxy !== undefined && typeof o.trustProxy !== 'boolean') {
    throw new InvalidOptionsError('DurableModule option admin.trustProxy must be true or false.');
  }
  const maxLive = o.maxLiveConnections ?? 100;
  if (!Number.isInteger(maxLive) || maxLive < 0 || maxLive > 100_000) {
    throw new InvalidOptionsError('DurableModule option admin.maxLiveConnections must be an integer between 0 and 100000 (default 100).');
  }
  if (o.readReplicaUrl !== undefined && !isPostgresUrl(o.readReplicaUrl)) {
    throw new InvalidOptionsError(
      "DurableModule option admin.readReplicaUrl must be a Postgres URL (postgresql://user@replica-host:5432/app) of a read replica of the app's database.",
    );
  }
  if (o.readReplicaUrl !== undefined) parsePostgresUrl(o.readReplicaUrl); // a malformed host list fails here, at boot
  return {
    path,
    guards: [...guards],
    unsafeNoGuard: !guards.length,
    dashboard: o.dashboard !== false,
    actor: o.actor ?? defaultActor,
    bulkTokenSecret: o.bulkTokenSecret,
    trustProxy: o.trustProxy === true,
    maxLiveConnections: maxLive,
    readReplicaUrl: o.readReplicaUrl,
  };
}
