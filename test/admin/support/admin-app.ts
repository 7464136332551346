import {
  Injectable,
  UnauthorizedException,
  Module,
  type CanActivate,
  type LoggerService,
  type DynamicModule,
  type ExecutionContext,
  type INestApplication,
  type Type,
} from '@nestjs/common';
import { Test } from '@nestjs/testing';
import {
  Durable,
  DurableModule,
  NonRetryableError,
  Step,
  Workflow,
  type BackfillInput,
  type DurableAdminOptions,
  type HooksOptions,
} from 'nestjs-durable';
import pg from 'pg';
import { createTestDatabase, type TestDatabase } from '../../support/db.js';
import { prismaFor } from '../../support/prisma.js';

/** Token under which the tests provide their PrismaClient (as an app's PrismaService would be). */
export class PrismaService {}

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

@Injectable()
export class AdminTestSteps {
  @Step()
  async add(a: number, b: number) {
    await sleep(2);
    return a + b;
  }

  @Step()
  async tick(i: number, ms: number) {
    await sleep(ms);
    return { i };
  }

  @Step({ retries: 0 })
  async explode(reason: string): Promise<never> {
    throw new NonRetryableError(`explode: ${reason}`);
  }

  /** A step that declares its undo (the dashboard marks it; cancel with compensation runs unreserve). */
  @Step({ compensate: 'unreserve' })
  async reserve(item: string) {
    return { item };
  }

  @Step()
  async unreserve(item: string, reserved: { item: string }) {
    await sleep(5);
    return `released ${reserved.item}`;
  }

  /** A long step that reports its progress and stops when its signal aborts. */
  @Step({ retries: 0 })
  async crunch(total: number, ms: number) {
    for (let i = 1; i <= total; i++) {
      Durable.progress({ done: i, total, message: `chunk ${i}` });
      await sleep(ms);
      const signal = Durable.signal();
      if (signal.aborted) throw signal.reason;
    }
    return total;
  }
}

@Injectable()
export class AdminTestWorkflows {
  constructor(private readonly steps: AdminTestSteps) {}

  /** Three quick steps. */
  @Workflow({ name: 'admin.sum', queue: 'admin-q', priority: 5 })
  async sum(input: { n: number }) {
    let total = 0;
    for (let i = 1; i <= (input?.n ?? 3); i++) total = await this.steps.add(total, i);
    return { total, runId: Durable.runId() };
  }

  /** One step; a run that succeeds is deleted at its end (not kept). */
  @Workflow({ name: 'admin.ping', queue: 'admin-q', deleteOnSuccess: true })
  async ping(input: { n?: number }) {
    return this.steps.add(0, input?.n ?? 1);
  }

  /** One step, then a failing one. */
  @Workflow({ name: 'admin.fail', queue: 'admin-q' })
  async fail(input: { reason?: string }) {
    await this.steps.add(1, 1);
    return this.steps.explode(input?.reason ?? 'boom');
  }

  /** Reserves items (each undoable), then a long step with progress: cancel-with-compensation target. */
  @Workflow({ name: 'admin.saga', queue: 'admin-slow' })
  async saga(input: { items?: string[]; total?: number; ms?: number }) {
    for (const item of input?.items ?? ['a', 'b']) await this.steps.reserve(item);
    return this.steps.crunch(input?.total ?? 300, input?.ms ?? 50);
  }

  /** Many short steps: RUNNING for a while (cancel target). */
  @Workflow({ name: 'admin.slow', queue: 'admin-slow', timeoutMs: 600_000 })
  async slow(input: { steps?: number; ms?: number }) {
    for (let i = 0; i < (input?.steps ?? 200); i++) await this.steps.tick(i, input?.ms ?? 150);
    return 'done';
  }

  /** Three children: one with the parent's tags (the default), one with its own, one with none. */
  @Workflow({ name: 'admin.family', queue: 'admin-q' })
  async family() {
    const kids = await Promise.all([
      Durable.startChild('admin.sum', { n: 1 }),
      Durable.startChild('admin.sum', { n: 1 }, { tags: ['child:own'] }),
      Durable.startChild('admin.sum', { n: 1 }, { tags: [] }),
    ]);
    return kids.map((k) => k.id);
  }

  /** A group of `n` admin.sum children (Durable.startChildren), joined. */
  @Workflow({ name: 'admin.fanout', queue: 'admin-q' })
  async fanout(input: { n?: number }) {
    const group = await Durable.startChildren('admin.sum', { count: input?.n ?? 30, input: () => ({ n: 1 }) });
    return group.wait();
  }

  /** A backfill over the numbers 1..total (no table: each batch is generated), throttled by its input. */
  @Workflow({ name: 'admin.numbers', queue: 'admin-slow' })
  numbers(input: BackfillInput & { total?: number }) {
    const total = input?.total ?? 1000;
    return Durable.backfill<number, number>(input, {
      batchSize: 20,
      read: async (after, limit) =>
        Array.from({ length: Math.max(0, Math.min(limit, total - (after ?? 0))) }, (_, i) => (after ?? 0) + i + 1),
      key: (n) => n,
      process: async () => {},
      estimate: async () => total,
    });
  }

  /** A step, a durable sleep, a message without timeout, one with a timeout: what the detail shows while it waits. */
  @Workflow({ name: 'admin.waiter', queue: 'admin-q' })
  async waiter(input: { sleepMs?: number; timeoutMs?: number }) {
    await this.steps.add(1, 1);
    await Durable.sleep(input?.sleepMs ?? 1000);
    const go = await Durable.recv('go');
    const late = await Durable.recv('late', { timeoutMs: input?.timeoutMs ?? 1000 });
    return { go, late };
  }
}

/**
 * Guard that lets a request through with `Authorization: Bearer <token>` (the scheme in any case);
 * otherwise 401 with `WWW-Authenticate: Bearer`, as an app's token guard should answer.
 */
export function bearerGuard(token: string): CanActivate {
  return {
    canActivate(ctx: ExecutionContext) {
      const http = ctx.switchToHttp();
      const req = http.getRequest<{ headers: Record<string, string | undefined> }>();
      const m = /^bearer[ \t]+(\S+)\s*$/i.exec(req.headers.authorization ?? '');
      if (m?.[1] === token) return true;
      http.getResponse<{ setHeader(name: string, value: string): void }>().setHeader('WWW-Authenticate', 'Bearer realm="durable admin"');
      throw new UnauthorizedException(m ? 'Wrong admin token.' : 'Admin token required: send Authorization: Bearer <token>.');
    },
  };
}

export interface AdminAppOptions {
  admin?: DurableAdminOptions | false;
  /** Use forRootAsync (admin as a static extra) instead of forRoot. */
  async?: boolean;
  /** Extra providers/guards resolved in the app. */
  providers?: Type[];
  /** Engine statements through Prisma instead of its own pool. */
  connection?: false;
  worker?: boolean;
  globalPrefix?: string;
  /** Engine options overriding the fast test defaults (e.g. a longer lease on a loaded machine). */
  engine?: {
    leaseMs?: number;
    heartbeatMs?: number;
    history?: boolean;
    appVersion?: string;
    runVersions?: 'any' | 'own' | string[];
    hooks?: HooksOptions;
  };
  /** Nest logger of the app (default: none). */
  logger?: LoggerService | false;
}

export interface AdminApp {
  app: INestApplication;
  db: TestDatabase;
  pool: pg.Pool;
  /** http.Server for supertest. */
  server: any;
  close(): Promise<void>;
}

const FAST = { leaseMs: 2_000, heartbeatMs: 400, pollIntervalMs: 100, sweepIntervalMs: 300, shutdownGraceMs: 300 };

/** A real Nest app with the library, the admin API enabled, on its own migrated database. */
export async function createAdminApp(label: string, o: AdminAppOptions = {}, existing?: TestDatabase): Promise<AdminApp> {
  const db = existing ?? (await createTestDatabase(label));
  const prisma = prismaFor(db.url);
  const admin = o.admin === undefined ? { unsafeNoGuard: true } : o.admin === false ? undefined : o.admin;
  const durable: DynamicModule = o.async
    ? DurableModule.forRootAsync({
        admin,
        useFactory: () => ({
          prisma: PrismaService,
          connection: o.connection ?? db.url,
          logging: false,
          worker: o.worker ?? true,
          ...FAST,
          ...o.engine,
        }),
      })
    : DurableModule.forRoot({
        prisma: PrismaService,
        connection: o.connection ?? db.url,
        logging: false,
        worker: o.worker ?? true,
        ...FAST,
        ...o.engine,
        admin,
      });

  @Module({
    imports: [durable],
    providers: [{ provide: PrismaService, useValue: prisma }, AdminTestSteps, AdminTestWorkflows, ...(o.providers ?? [])],
    exports: [PrismaService],
  })
  class AdminTestAppModule {}

  const moduleRef = await Test.createTestingModule({ imports: [AdminTestAppModule] }).compile();
  const app = moduleRef.createNestApplication({ logger: o.logger ?? false });
  if (o.globalPrefix) app.setGlobalPrefix(o.globalPrefix);
  await app.init();
  const pool = new pg.Pool({ connectionString: db.url, max: 3 });
  return {
    app,
    db,
    pool,
    server: app.getHttpServer(),
    async close() {
      await app.close();
      await pool.end();
      await prisma.$disconnect();
      if (!existing) await db.drop();
    },
  };
}

export interface SeedOptions {
  /** Runs to insert. */
  count: number;
  /** Prefix of their ids. */
  prefix?: string;
  workflows?: string[];
  queues?: string[];
  /** Created this many ms apart, the newest `newestAgoMs` ago. */
  spacingMs?: number;
  newestAgoMs?: number;
  parentId?: string | null;
  /** Steps recorded per run. */
  steps?: number;
  /** Lease of the RUNNING ones, from now (negative: expired). Default one hour. */
  leaseMs?: number;
}

/**
 * Inserts runs directly (fast; hundreds at once), on queues no worker serves so they stay as
 * seeded. Statuses cycle PENDING, RUNNING, WAITING, SUCCEEDED, FAILED, CANCELLED by index.
 */
export async function seedRuns(pool: pg.Pool, s: SeedOptions): Promise<string[]> {
  const { rows } = await pool.query<{ id: string }>(
    `WITH g AS (
       SELECT i, $2::text || lpad(i::text, 5, '0') AS id,
              (ARRAY['PENDING','RUNNING','WAITING','SUCCEEDED','FAILED','CANCELLED'])[1 + i % 6] AS status,
              now() - ($6::float8 + ($1 - 1 - i) * $5::float8) * interval '1 millisecond' AS created
       FROM generate_series(0, $1 - 1) AS i),
     ins AS (
       INSERT INTO durable_runs (id, workflow_name, queue, status, input, output, error, created_at, updated_at, started_at, finished_at,
                                 available_at, parent_id, lease_owner, lease_expires_at, lease_epoch, attempt)
       SELECT g.id, ($3::text[])[1 + g.i % cardinality($3::text[])], ($4::text[])[1 + g.i % cardinality($4::text[])], g.status,
              jsonb_build_object('i', g.i), CASE WHEN g.status = 'SUCCEEDED' THEN jsonb_build_object('ok', g.i) END,
              CASE WHEN g.status = 'FAILED' THEN jsonb_build_object('name', 'Error', 'message', 'seeded failure ' || g.i) END,
              g.created, g.created + interval '2 seconds',
              CASE WHEN g.status <> 'PENDING' THEN g.created + interval '10 milliseconds' END,
              CASE WHEN g.status IN ('SUCCEEDED','FAILED','CANCELLED') THEN g.created + interval '2 seconds' END,
              g.created, $7,
              CASE WHEN g.status = 'RUNNING' THEN 'seed-worker' END,
              CASE WHEN g.status = 'RUNNING' THEN now() + $9::float8 * interval '1 millisecond' END,
              CASE WHEN g.status = 'PENDING' THEN 0 ELSE 1 END, CASE WHEN g.status = 'PENDING' THEN 0 ELSE 1 END
       FROM g
       RETURNING id),
     st AS (
       INSERT INTO durable_steps (run_id, seq, name, status, output, attempts, started_at, finished_at)
       SELECT ins.id, k, 'step' || k, 'SUCCEEDED', jsonb_build_object('k', k), 1, now() - interval '1 second', now() - interval '1 second' + (k + 1) * interval '10 milliseconds'
       FROM ins CROSS JOIN generate_series(0, $8::int - 1) AS k)
     SELECT id FROM ins ORDER BY id`,
    [
      s.count,
      s.prefix ?? 'seed-',
      s.workflows ?? ['billing.charge', 'mail.send', 'report.build'],
      s.queues ?? ['seed-a', 'seed-b'],
      s.spacingMs ?? 1000,
      s.newestAgoMs ?? 1000,
      s.parentId ?? null,
      s.steps ?? 0,
      s.leaseMs ?? 3_600_000,
    ],
  );
  return rows.map((r) => r.id);
}
