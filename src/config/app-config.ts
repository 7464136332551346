import { callbackSecret } from './callback-secret.js';
import { randomBytes } from 'node:crypto';

/** Everything the example app can be told, read once from the environment (see README). */
export interface AppConfig {
  /** HTTP port; 0 picks a free one. PORT, default 3000. */
  port: number;
  /** The database the app and the library use: DATABASE_URL, PostgreSQL or MariaDB (mysql://); main.ts sets it to the embedded Postgres when there is none. */
  databaseUrl: string;
  /** Connections of Prisma's pool. */
  prismaPoolSize: number;
  durable: {
    /** Connections of the library's own pool (claims, checkpoints); it adds one for LISTEN. */
    poolSize: number;
    concurrency?: number;
    leaseMs?: number;
    heartbeatMs?: number;
    pollIntervalMs?: number;
    sweepIntervalMs?: number;
    shutdownGraceMs?: number;
  };
  payments: {
    /** Probability that one charge attempt fails with a (retryable) gateway error. PAYMENT_FAILURE_RATE, default 0.3. */
    failureRate: number;
    /** Each charge takes between min and max ms. PAYMENT_MIN_LATENCY_MS / PAYMENT_MAX_LATENCY_MS, default 500–2000. */
    minLatencyMs: number;
    maxLatencyMs: number;
  };
  outbox: {
    /** How often the relay looks for unsent emails. OUTBOX_POLL_MS, default 500. */
    pollMs: number;
  };
  fulfilment: {
    /** Paid but no shipment webhook after this long: the warehouse gets a reminder. SHIPMENT_REMINDER_MS, default 60 000 (demo value; think days). */
    shipmentReminderMs: number;
    /** No shipment webhook this long after payment: the order is given up, the charge refunded and the stock released. SHIPMENT_TIMEOUT_MS, default one week. */
    shipmentTimeoutMs: number;
    /** Shipped: ask for a review this much later (a durable sleep). REVIEW_REQUEST_DELAY_MS, default 10 000 (demo value; think a week). */
    reviewRequestDelayMs: number;
  };
  orders: {
    /** The nightly job cancels orders still unpaid (NEW or RESERVED) this long after they were placed. UNPAID_ORDER_TTL_MS, default one day. */
    unpaidTtlMs: number;
  };
  reports: {
    /** Where the daily sales reports are written. REPORTS_DIR, default .data/reports. */
    dir: string;
    /** Create it at start: true for the default; a REPORTS_DIR you set must exist (try a missing one to see a run fail). */
    createDir: boolean;
  };
  /** Bearer token of the admin dashboard and API at /durable. ADMIN_TOKEN; main.ts makes up one when unset. */
  adminToken: string;
  /** True when ADMIN_TOKEN was not set and the token was made up at start (main.ts prints it only then). */
  adminTokenMadeUp: boolean;
  /** Key of the shipment webhook's HMAC signature (header x-shipment-signature). SHIPMENT_WEBHOOK_SECRET; made up at start when unset. */
  shipmentWebhookSecret: string;
  /** True when SHIPMENT_WEBHOOK_SECRET was not set (main.ts prints the made-up one). */
  shipmentWebhookSecretMadeUp: boolean;
  returns: {
    /** Refunds of returned orders above this amount (cents) wait for an approver. REFUND_APPROVAL_CENTS, default 5000. */
    approvalAboveCents: number;
    /** Bearer token of the refund approvers (besides the admin token, for the dashboard). APPROVER_TOKEN; made up when unset. */
    approverToken: string;
  };
  callbacks: {
    /** Key the callback URLs are signed with (at least 32 bytes, the same on every instance). CALLBACK_SECRET; else made up once and kept in .data/callback-secret. */
    secret: string;
    /** Where third parties reach the shop: callback URLs start with it. PUBLIC_URL, default http://localhost:<PORT>. */
    publicUrl: string;
  };
}

export const APP_CONFIG = Symbol('APP_CONFIG');

type Env = Record<string, string | undefined>;

function num(env: Env, key: string, fallback: number): number;
function num(env: Env, key: string, fallback: undefined): number | undefined;
function num(env: Env, key: string, fallback: number | undefined): number | undefined {
  const raw = env[key];
  if (raw === undefined || raw === '') return fallback;
  const n = Number(raw);
  if (!Number.isFinite(n)) throw new Error(`${key} must be a number (got "${raw}")`);
  return n;
}

/** Reads the config from environment variables; `overrides` wins (tests use it). */
export function appConfigFromEnv(env: Env = process.env, overrides: Partial<AppConfig> = {}): AppConfig {
  const databaseUrl = overrides.databaseUrl ?? env.DATABASE_URL ?? '';
  if (!databaseUrl) throw new Error('DATABASE_URL is not set (main.ts starts an embedded Postgres when there is none).');
  return {
    port: num(env, 'PORT', 3000),
    databaseUrl,
    prismaPoolSize: num(env, 'PRISMA_POOL_SIZE', 10),
    durable: {
      poolSize: num(env, 'DURABLE_POOL_SIZE', 10),
      concurrency: num(env, 'DURABLE_CONCURRENCY', undefined),
      leaseMs: num(env, 'DURABLE_LEASE_MS', undefined),
      heartbeatMs: num(env, 'DURABLE_HEARTBEAT_MS', undefined),
      pollIntervalMs: num(env, 'DURABLE_POLL_MS', undefined),
      sweepIntervalMs: num(env, 'DURABLE_SWEEP_MS', undefined),
      shutdownGraceMs: num(env, 'DURABLE_SHUTDOWN_GRACE_MS', undefined),
    },
    payments: {
      failureRate: num(env, 'PAYMENT_FAILURE_RATE', 0.3),
      minLatencyMs: num(env, 'PAYMENT_MIN_LATENCY_MS', 500),
      maxLatencyMs: num(env, 'PAYMENT_MAX_LATENCY_MS', 2000),
    },
    outbox: { pollMs: num(env, 'OUTBOX_POLL_MS', 500) },
    fulfilment: {
      shipmentReminderMs: num(env, 'SHIPMENT_REMINDER_MS', 60_000),
      shipmentTimeoutMs: num(env, 'SHIPMENT_TIMEOUT_MS', 7 * 24 * 3600_000),
      reviewRequestDelayMs: num(env, 'REVIEW_REQUEST_DELAY_MS', 10_000),
    },
    orders: { unpaidTtlMs: num(env, 'UNPAID_ORDER_TTL_MS', 24 * 3600_000) },
    reports: { dir: env.REPORTS_DIR || '.data/reports', createDir: !env.REPORTS_DIR },
    adminToken: env.ADMIN_TOKEN || randomBytes(12).toString('base64url'),
    adminTokenMadeUp: !env.ADMIN_TOKEN,
    shipmentWebhookSecret: env.SHIPMENT_WEBHOOK_SECRET || randomBytes(16).toString('base64url'),
    shipmentWebhookSecretMadeUp: !env.SHIPMENT_WEBHOOK_SECRET,
    returns: {
      approvalAboveCents: num(env, 'REFUND_APPROVAL_CENTS', 5_000),
      approverToken: env.APPROVER_TOKEN || randomBytes(12).toString('base64url'),
    },
    callbacks: {
      secret: callbackSecret(env.CALLBACK_SECRET),
      publicUrl: (env.PUBLIC_URL || `http://localhost:${env.PORT || 3000}`).replace(/\/+$/, ''),
    },
    ...overrides,
  };
}
