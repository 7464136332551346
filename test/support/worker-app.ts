import { AsyncLocalStorage } from 'node:async_hooks';
import { Inject, Injectable, Module, type OnApplicationShutdown } from '@nestjs/common';
import { PrismaPg } from '@prisma/adapter-pg';
import {
  Durable,
  DurableModule,
  OnDurableEvent,
  postgresPoolConfig,
  Step,
  Workflow,
  type BackfillInput,
  type DurableLifecycleEvent,
} from 'nestjs-durable';
import { PrismaClient } from '../../src/generated/prisma/client.js';
import { WORKER_CALLBACK_SECRET } from './worker-secrets.js';

/**
 * The app that test worker processes run: a real Nest application context with the library,
 * configured from the environment (DATABASE_URL, DURABLE_* knobs).
 */
const env = (k: string, d: number) => (process.env[k] ? Number(process.env[k]) : d);

@Injectable()
export class PrismaService extends PrismaClient implements OnApplicationShutdown {
  constructor() {
    super({ adapter: new PrismaPg(postgresPoolConfig(process.env.DATABASE_URL!, { max: 4 })) });
  }
  // Disconnect after nestjs-durable drained its steps (see docs/getting-started.md, "Register the module").
  async onApplicationShutdown() {
    await this.$disconnect();
  }
}

export interface TestRunInput {
  /** Index of the step that sleeps (0-based), and for how long. */
  slowStep?: number;
  slowMs?: number;
  /** Only this process is slow (so a recovering worker is not). */
  slowPid?: number;
  /** Number of plain steps. Default 3. */
  steps?: number;
  /** Add a transactional ledger step at the end. */
  ledger?: boolean;
}

@Injectable()
export class TestSteps {
  constructor(@Inject(PrismaService) private readonly prisma: PrismaService) {}

  /** Counts its executions in test_step_executions, then optionally sleeps. */
  @Step()
  async count(runId: string, step: string, sleepMs: number) {
    await this.prisma.$executeRaw`INSERT INTO test_step_executions (run_id, step, pid) VALUES (${runId}, ${step}, ${process.pid})`;
    if (sleepMs) await new Promise((r) => setTimeout(r, sleepMs));
    return { step, pid: process.pid };
  }

  /** Writes a ledger row through the step's transaction: must commit exactly once per run. */
  @Step({ transactional: true, transaction: { timeout: 60_000 } })
  async ledger(runId: string, sleepMs: number) {
    const tx = Durable.tx<PrismaClient>();
    await tx.$executeRaw`INSERT INTO test_ledger (run_id, step, pid) VALUES (${runId}, 'ledger', ${process.pid})`;
    if (sleepMs) await new Promise((r) => setTimeout(r, sleepMs));
    return { pid: process.pid };
  }
}

@Injectable()
export class TestWorkflows {
  constructor(@Inject(TestSteps) private readonly steps: TestSteps) {}

  @Workflow({ name: 'counted' })
  async counted(input: TestRunInput) {
    const runId = Durable.runId();
    const pids: number[] = [];
    const n = input.steps ?? 3;
    const slow = (i: number) => (input.slowStep === i && (!input.slowPid || input.slowPid === process.pid) ? (input.slowMs ?? 0) : 0);
    for (let i = 0; i < n; i++) pids.push((await this.steps.count(runId, `s${i}`, slow(i))).pid);
    if (input.ledger) pids.push((await this.steps.ledger(runId, slow(n))).pid);
    return { pids, finishedBy: process.pid };
  }

  /**
   * A group of `children` ledger runs (Durable.startChildren). Each input takes `inputMs` of
   * synchronous work to compute, so the group's chunks are written slowly enough for a kill to land
   * between them. Returns the group's counters and the number of outcomes read back.
   */
  @Workflow({ name: 'fanOutLedger' })
  async fanOutLedger(input: { children: number; inputMs?: number }) {
    const pause = new Int32Array(new SharedArrayBuffer(4));
    const group = await Durable.startChildren<{ pids: number[] }>('counted', {
      count: input.children,
      input: () => {
        if (input.inputMs) Atomics.wait(pause, 0, 0, input.inputMs);
        return { steps: 0, ledger: true };
      },
    });
    const progress = await group.wait();
    let succeeded = 0;
    for (let from = 0; from < group.size; from += 1_000)
      succeeded += (await group.results({ from, limit: 1_000 })).filter((o) => o.status === 'SUCCEEDED').length;
    return { progress, succeeded };
  }

  /** `counted`, not kept: a run that succeeds is deleted by its end (@Workflow({ deleteOnSuccess })). */
  @Workflow({ name: 'countedJob', deleteOnSuccess: true })
  countedJob(input: TestRunInput) {
    return this.counted(input);
  }
}

/** The tenant of the run in execution, as the app's own request context would hold it (restored by the context option). */
export const tenantScope = new AsyncLocalStorage<{ tenantId: string }>();

/**
 * Backfills and the run context under kills: `backfillLedger` walks test_backfill_items (created by
 * the test) and writes one ledger row per item through each batch's transaction; `tenantEcho` records
 * which tenant its steps saw (Durable.context() and the restored request context) in test_step_executions.
 */
@Injectable()
export class TestBackfills {
  @Workflow({ name: 'backfillLedger', queue: 'backfills' })
  backfillLedger(input: BackfillInput) {
    return Durable.backfill<{ id: number }, number>(input, {
      batchSize: 500,
      read: (after, limit, tx: PrismaClient) =>
        tx.$queryRaw<Array<{ id: number }>>`SELECT id FROM test_backfill_items WHERE id > ${after ?? 0} ORDER BY id LIMIT ${limit}`,
      key: (row) => row.id,
      process: async (rows, tx: PrismaClient) => {
        await tx.$executeRawUnsafe(
          'INSERT INTO test_backfill_ledger (item_id, pid) SELECT unnest($1::int[]), $2',
          rows.map((r) => r.id),
          process.pid,
        );
      },
    });
  }
}

@Injectable()
export class TestTenantWorkflows {
  constructor(@Inject(PrismaService) private readonly prisma: PrismaService) {}

  @Step()
  async seen(label: string, sleepMs: number) {
    const tenant = `${Durable.context<{ tenantId: string }>()?.tenantId ?? '-'}/${tenantScope.getStore()?.tenantId ?? '-'}`;
    const runId = Durable.runId();
    const [{ n }] = await this.prisma.$queryRaw<
      Array<{ n: number }>
    >`SELECT count(*)::int AS n FROM test_step_executions WHERE run_id = ${runId}`;
    await this.prisma
      .$executeRaw`INSERT INTO test_step_executions (run_id, step, pid) VALUES (${runId}, ${`${label}:${tenant}`}, ${process.pid})`;
    // Only the run's very first step execution is slow (the one a test kills its process in).
    if (sleepMs && n === 0) await new Promise((r) => setTimeout(r, sleepMs));
    return tenant;
  }

  @Workflow({ name: 'tenantEcho' })
  async tenantEcho(input: { slowMs: number }) {
    const first = await this.seen('first', input.slowMs);
    const second = await this.seen('second', 0);
    return { first, second, finishedBy: process.pid };
  }
}

/**
 * Lifecycle hooks (DURABLE_TEST_HOOKS=1): each delivery is a row of test_hook_deliveries (created
 * by the test). With DURABLE_TEST_HOOK_HANG=1 the handler never returns after recording one: the
 * process holds the consumer until it is killed, and its cursor never moves past the event.
 */
@Injectable()
export class TestHooks {
  constructor(@Inject(PrismaService) private readonly prisma: PrismaService) {}

  @OnDurableEvent(['run.succeeded', 'run.failed'], { consumer: 'test-hooks' })
  async record(event: DurableLifecycleEvent) {
    await this.prisma.$executeRaw`INSERT INTO test_hook_deliveries (event_id, type, run_id, workflow, pid)
      VALUES (${event.id}, ${event.type}, ${event.runId}, ${event.workflowName}, ${process.pid})`;
    if (process.env.DURABLE_TEST_HOOK_HANG === '1') await new Promise(() => {});
  }
}

/**
 * Talking to runs across processes and kills: `streamTicker` writes n chunks to its stream `ticks`
 * from workflow code, a slow step between two; `callbackAfterKill` makes a callback URL, records
 * its token in test_callbacks (created by the test) and waits for the POST.
 */
@Injectable()
export class TestTalkWorkflows {
  @Step()
  async pause(ms: number) {
    await new Promise((r) => setTimeout(r, ms));
  }

  constructor(@Inject(PrismaService) private readonly prisma: PrismaService) {}

  @Step()
  async publish(runId: string, token: string) {
    await this.prisma
      .$executeRaw`INSERT INTO test_callbacks (run_id, token, pid) VALUES (${runId}, ${token}, ${process.pid}) ON CONFLICT (run_id) DO NOTHING`;
  }

  @Workflow({ name: 'streamTicker' })
  async streamTicker(input: { n: number; everyMs: number }) {
    const ticks = Durable.stream<{ i: number; pid: number }>('ticks');
    for (let i = 0; i < input.n; i++) {
      await ticks.write({ i, pid: process.pid });
      await this.pause(input.everyMs);
    }
    return { finishedBy: process.pid };
  }

  @Workflow({ name: 'callbackAfterKill' })
  async callbackAfterKill() {
    const cb = await Durable.callback<{ paid: number }>({ timeoutMs: 120_000 });
    await this.publish(Durable.runId(), cb.token);
    return { body: await cb.wait(), finishedBy: process.pid };
  }
}

@Module({
  imports: [
    DurableModule.forRoot({
      prisma: PrismaService,
      concurrency: env('DURABLE_CONCURRENCY', 10),
      leaseMs: env('DURABLE_LEASE_MS', 2_000),
      heartbeatMs: env('DURABLE_HEARTBEAT_MS', 400),
      pollIntervalMs: env('DURABLE_POLL_MS', 200),
      sweepIntervalMs: env('DURABLE_SWEEP_MS', 300),
      shutdownGraceMs: env('DURABLE_GRACE_MS', 1_000),
      worker: process.env.DURABLE_WORKER !== 'false',
      hooks: { pollIntervalMs: 100, settleMs: 100, leaseMs: env('DURABLE_HOOK_LEASE_MS', 2_000) },
      context: { capture: () => tenantScope.getStore(), restore: (tenant: { tenantId: string }, run) => tenantScope.run(tenant, run) },
      callbacks: { secret: WORKER_CALLBACK_SECRET },
    }),
  ],
  providers: [
    PrismaService,
    TestSteps,
    TestWorkflows,
    TestBackfills,
    TestTenantWorkflows,
    TestTalkWorkflows,
    ...(process.env.DURABLE_TEST_HOOKS === '1' ? [TestHooks] : []),
  ],
  exports: [PrismaService],
})
export class WorkerAppModule {}
