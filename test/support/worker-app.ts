import { Inject, Injectable, Module, type OnApplicationShutdown } from '@nestjs/common';
import { PrismaPg } from '@prisma/adapter-pg';
import { Durable, DurableModule, OnDurableEvent, postgresPoolConfig, Step, Workflow, type DurableLifecycleEvent } from 'nestjs-durable';
import { PrismaClient } from '../../src/generated/prisma/client.js';

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
    }),
  ],
  providers: [PrismaService, TestSteps, TestWorkflows, ...(process.env.DURABLE_TEST_HOOKS === '1' ? [TestHooks] : [])],
  exports: [PrismaService],
})
export class WorkerAppModule {}
