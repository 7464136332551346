// A worker process for the flow-control tests: `node --import tsx test/flow/flow-worker.ts` with
// DATABASE_URL set. A plain DurableEngine serving queue "flow" (10 slots per process); the limits
// come from durable_queue_limits (set by the test at runtime). Each run records the interval it
// executes in (test_ledger rows 'start' and 'end', database clock) and holds its slot `ms` in
// between; with `holdFirst`, only its first execution holds (a recovery after a kill goes fast).
// PostgreSQL or MariaDB, by the URL.
import { Durable, WorkflowRegistry } from 'nestjs-durable';
import { databaseUrl, engineOptions, serveEngine } from '../support/worker-process.js';
import { ledgerPool } from './ledger-pool.js';

const ledger = await ledgerPool(databaseUrl());
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

interface Input {
  key?: string;
  ms: number;
  holdFirst?: boolean;
}

const registry = new WorkflowRegistry();
registry.register({
  name: 'limited',
  queue: 'flow',
  options: { concurrencyKey: (i: Input) => i.key ?? null },
  run: async (input) => {
    const { ms, holdFirst } = input as Input;
    const id = Durable.runId();
    await Durable.step('work', async () => {
      const before = await ledger.mark(id, 'start');
      if (!holdFirst || before === 0) await sleep(ms);
      await ledger.mark(id, 'end');
    });
    return process.pid;
  },
});

await serveEngine(
  {
    registry,
    options: engineOptions({
      concurrency: 10,
      // Long enough that a loaded machine's pause does not end a lease (a second execution of a
      // run would add an interval to the overlap checks); the kill test waits for it once.
      leaseMs: 5_000,
      heartbeatMs: 1_000,
      pollIntervalMs: 200,
      sweepIntervalMs: 300,
      shutdownGraceMs: 1_000,
    }),
  },
  () => ledger.end(),
);
