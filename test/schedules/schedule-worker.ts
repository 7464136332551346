// A worker process for the schedules tests: `node --import tsx test/schedules/schedule-worker.ts`
// with DATABASE_URL set. A plain DurableEngine (no Nest) running the scheduler; prints "ready" once
// started, stops gracefully on SIGTERM. Each run writes one ledger row in a transactional step
// (exactly once per run) and optionally takes its time.
import 'reflect-metadata';
import { Durable, Step, WorkflowRegistry, type ScheduledInput } from 'nestjs-durable';
import type { PrismaClient } from '../../src/generated/prisma/client.js';
import { prismaFor } from '../support/prisma.js';
import { databaseUrl, engineOptions, serveEngine } from '../support/worker-process.js';

const prisma = prismaFor(databaseUrl(), 4);

class Steps {
  @Step({ transactional: true })
  async ledger(runId: string) {
    await Durable.tx<PrismaClient>()
      .$executeRaw`INSERT INTO test_ledger (run_id, step, pid) VALUES (${runId}, 'scheduled', ${process.pid})`;
  }
}
const steps = new Steps();

const registry = new WorkflowRegistry();
registry.register({
  name: 'tick',
  queue: 'default',
  options: {},
  run: async (input) => {
    const { input: opts } = input as ScheduledInput<{ ms?: number }>;
    await steps.ledger(Durable.runId());
    if (opts?.ms) await Durable.sleep(opts.ms);
    return process.pid;
  },
});

await serveEngine(
  {
    registry,
    prisma: prisma as never,
    options: engineOptions({
      leaseMs: 2_000,
      heartbeatMs: 400,
      pollIntervalMs: 200,
      sweepIntervalMs: 300,
      shutdownGraceMs: 1_000,
      scheduleMisfireMs: 1_000,
    }),
  },
  () => prisma.$disconnect(),
);
