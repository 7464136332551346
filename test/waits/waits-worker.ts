// A worker process for the durable-waits tests: `node --import tsx test/waits/waits-worker.ts`
// with DATABASE_URL set. A plain DurableEngine (no Nest) with the workflows below; prints "ready"
// once it claims, stops gracefully on SIGTERM. Step executions are counted in test_step_executions.
import 'reflect-metadata';
import pg from 'pg';
import { Durable, Step, WorkflowRegistry, type WorkflowOptions } from 'nestjs-durable';
import { databaseUrl, engineOptions, serveEngine } from '../support/worker-process.js';

const pool = new pg.Pool({ connectionString: databaseUrl(), max: 4 });

class Steps {
  /** Records its execution (run, step, pid), then optionally takes its time. */
  @Step({ retries: 0 })
  async count(step: string, ms = 0) {
    await pool.query('INSERT INTO test_step_executions (run_id, step, pid) VALUES ($1, $2, $3)', [Durable.runId(), step, process.pid]);
    if (ms) await new Promise((r) => setTimeout(r, ms));
    return { step, pid: process.pid };
  }
}
const steps = new Steps();

/** Workflows of the waits tests (their names are what the test process starts). */
export const workflows: Record<string, [(input: any) => Promise<unknown>, WorkflowOptions?]> = {
  /** s0, a durable sleep, s1. */
  sleeper: [
    async (input: { sleepMs: number }) => {
      await steps.count('s0');
      await Durable.sleep(input.sleepMs);
      await steps.count('s1');
      return { wokeAt: new Date(), pid: process.pid };
    },
  ],
  /** Four parallel steps finishing at different times (the test kills the process between them). */
  parallel: [
    async (input: { ms: number[]; slowPid?: number }) => {
      const slow = !input.slowPid || input.slowPid === process.pid;
      const r = await Promise.all(input.ms.map((ms, i) => steps.count(`p${i}`, slow ? ms : 0)));
      const after = await steps.count('after');
      return { steps: r.map((x) => x.step), after: after.step };
    },
  ],
  /** Fan-out of n children, fan-in of their results. */
  /** Children of staggered lengths (ms × 1…5): some finish well before others. */
  fanout: [
    async (input: { n: number; ms: number }) => {
      await steps.count('before');
      const children = await Promise.all(
        Array.from({ length: input.n }, (_, i) => Durable.startChild<number>('leaf', { i, ms: input.ms * (1 + (i % 5)) })),
      );
      const results = await Promise.all(children.map((c) => c.result()));
      await steps.count('after');
      return { sum: results.reduce((a, b) => a + b, 0), ids: children.map((c) => c.id) };
    },
  ],
  leaf: [
    async (input: { i: number; ms: number }) => {
      await steps.count(`leaf${input.i}`, input.ms);
      return input.i * input.i;
    },
  ],
  /** A step far longer than the run's deadline. */
  slow: [
    async (input: { ms: number }) => {
      await steps.count('slow', input.ms);
      return 'done';
    },
  ],
};

const registry = new WorkflowRegistry();
for (const [name, [run, options]] of Object.entries(workflows)) registry.register({ name, queue: 'default', options: options ?? {}, run });

await serveEngine(
  {
    registry,
    options: engineOptions({
      leaseMs: 2_000,
      heartbeatMs: 400,
      pollIntervalMs: 200,
      sweepIntervalMs: 300,
      shutdownGraceMs: 1_000,
      inMemoryWaitMaxMs: 1_000,
      suspendGraceMs: 200,
      concurrency: 30,
    }),
  },
  () => pool.end(),
);
