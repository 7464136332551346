// A worker process for the compensation kill tests: `node --import tsx test/authoring/compensation-worker.ts`
// with DATABASE_URL set. A plain DurableEngine (no Nest) with a Prisma client for transactional
// steps; prints "ready" once it claims, stops gracefully on SIGTERM. Its workflows book steps
// that declare compensations: transactional ones write test_ledger (with the checkpoint),
// plain ones record their executions in test_step_executions.
import 'reflect-metadata';
import pg from 'pg';
import { Durable, NonRetryableError, Step, WorkflowRegistry } from 'nestjs-durable';
import { prismaFor } from '../support/prisma.js';
import { databaseUrl, engineOptions, serveEngine } from '../support/worker-process.js';

const url = databaseUrl();
const pool = new pg.Pool({ connectionString: url, max: 4 });
const prisma = prismaFor(url, 4);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
type Tx = { $executeRawUnsafe(sql: string, ...params: unknown[]): Promise<number> };

class Steps {
  /** Transactional: a ledger row with the checkpoint; undone by unbook (transactional too). */
  @Step({ transactional: true, compensate: 'unbook' })
  async book(i: number, _ms: number) {
    await Durable.tx<Tx>().$executeRawUnsafe(
      'INSERT INTO test_ledger (run_id, step, amount, pid) VALUES ($1, $2, 1, $3)',
      Durable.runId(),
      `book${i}`,
      process.pid,
    );
    return { i };
  }

  @Step({ transactional: true, retries: { maxAttempts: 10, initialDelayMs: 50 } })
  async unbook(i: number, ms: number, booked: { i: number }) {
    await Durable.tx<Tx>().$executeRawUnsafe(
      'INSERT INTO test_ledger (run_id, step, amount, pid) VALUES ($1, $2, -1, $3)',
      Durable.runId(),
      `unbook${booked.i}`,
      process.pid,
    );
    await sleep(ms); // inside the transaction: a kill now rolls the row back with the checkpoint
  }

  /** Plain: an execution record outside any transaction; undone by unnotify (plain: at least once). */
  @Step({ compensate: 'unnotify' })
  async notify(i: number, _ms: number) {
    await pool.query('INSERT INTO test_step_executions (run_id, step, pid) VALUES ($1, $2, $3)', [
      Durable.runId(),
      `notify${i}`,
      process.pid,
    ]);
    return { i };
  }

  @Step({ retries: { maxAttempts: 10, initialDelayMs: 50 } })
  async unnotify(i: number, ms: number, _notified: { i: number }) {
    await pool.query('INSERT INTO test_step_executions (run_id, step, pid) VALUES ($1, $2, $3)', [
      Durable.runId(),
      `unnotify${i}`,
      process.pid,
    ]);
    await sleep(ms); // after its effect, before its checkpoint: a kill now makes it run again
  }

  @Step({ retries: 0 })
  async explode(): Promise<never> {
    throw new NonRetryableError('the last step failed');
  }
}
const steps = new Steps();

/** n steps, alternating transactional and plain, each with its compensation. */
async function forward(n: number, ms: number) {
  for (let i = 0; i < n; i++) {
    if (i % 2 === 0) await steps.book(i, ms);
    else await steps.notify(i, ms);
  }
}

const registry = new WorkflowRegistry();
/** Fails after its steps: the compensations run before the run is FAILED. */
registry.register({
  name: 'failingSaga',
  queue: 'default',
  options: {},
  run: async (input) => {
    const { n, ms } = input as { n: number; ms: number };
    await forward(n, ms);
    await steps.explode();
  },
});
/** Waits after its steps until it is cancelled with compensation. */
registry.register({
  name: 'waitingSaga',
  queue: 'default',
  options: {},
  run: async (input) => {
    const { n, ms } = input as { n: number; ms: number };
    await forward(n, ms);
    await Durable.recv('never');
  },
});

await serveEngine(
  {
    registry,
    prisma: prisma as never,
    options: engineOptions({
      leaseMs: 1_500,
      heartbeatMs: 300,
      pollIntervalMs: 100,
      sweepIntervalMs: 200,
      shutdownGraceMs: 1_000,
      suspendGraceMs: 100,
      logger: { log() {}, warn() {}, error: (m) => console.error(m) },
    }),
  },
  () => Promise.all([pool.end(), prisma.$disconnect()]),
);
