// A worker process for the schedules tests: `node --import tsx test/schedules/schedule-worker.ts`
// with DATABASE_URL set. A plain DurableEngine (no Nest) running the scheduler; prints "ready" once
// started, stops gracefully on SIGTERM. Each run writes one ledger row in a transactional step
// (exactly once per run) and optionally takes its time.
import 'reflect-metadata';
import { Durable, DurableEngine, Step, WorkflowRegistry, type ScheduledInput } from 'nestjs-durable';
import type { PrismaClient } from '../../src/generated/prisma/client.js';
import { prismaFor } from '../support/prisma.js';

const url = process.env.DATABASE_URL!;
const env = (k: string, d: number) => (process.env[k] ? Number(process.env[k]) : d);
const prisma = prismaFor(url, 4);

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

const engine = new DurableEngine({
  registry,
  connection: url,
  prisma: prisma as never,
  options: {
    leaseMs: env('DURABLE_LEASE_MS', 2_000),
    heartbeatMs: env('DURABLE_HEARTBEAT_MS', 400),
    pollIntervalMs: env('DURABLE_POLL_MS', 200),
    sweepIntervalMs: env('DURABLE_SWEEP_MS', 300),
    shutdownGraceMs: env('DURABLE_GRACE_MS', 1_000),
    scheduleMisfireMs: env('DURABLE_MISFIRE_MS', 1_000),
    logger: { log() {}, warn: (m) => console.warn(m), error: (m) => console.error(m) },
  },
});

await engine.start();
process.on('SIGTERM', () => {
  void engine
    .stop()
    .then(() => prisma.$disconnect())
    .then(() => process.exit(0));
});
process.stdout.write('ready\n');
