// A worker process for the rate-limit, singleton and debounce tests across processes:
// `node --import tsx test/flow/flow-keys-worker.ts` with DATABASE_URL set. A plain DurableEngine
// (20 slots per queue) with three workflows: 'rated' (queue rated) and 'bounce' (queue keys) return at
// once, 'single' (queue keys) waits for a message 'go'. It also starts runs when told: one JSON line on stdin
// { tag, starts: [{ workflow, input, options }] } → all of them at once (Promise.all), answered by
// one line `done <tag> <json [{ id, outcome }]>`, so the test can make three processes start at the same instant.
import { createInterface } from 'node:readline';
import { Durable, WorkflowRegistry, type StartOptions } from 'nestjs-durable';
import { engineOptions, serveEngine } from '../support/worker-process.js';

const registry = new WorkflowRegistry();
registry.register({ name: 'rated', queue: 'rated', options: {}, run: async () => process.pid });
registry.register({ name: 'bounce', queue: 'keys', options: {}, run: async (input) => input });
registry.register({
  name: 'single',
  queue: 'keys',
  options: {},
  run: async (input) => {
    await Durable.recv('go');
    return input;
  },
});

const engine = await serveEngine({
  registry,
  options: engineOptions({ concurrency: 20, leaseMs: 5_000, pollIntervalMs: 200, sweepIntervalMs: 500, shutdownGraceMs: 1_000 }),
});
createInterface({ input: process.stdin }).on('line', (line) => {
  const { tag, starts } = JSON.parse(line) as { tag: string; starts: Array<{ workflow: string; input: unknown; options: StartOptions }> };
  void Promise.all(starts.map((s) => engine.startRun(s.workflow, s.input, s.options))).then(
    (handles) => process.stdout.write(`done ${tag} ${JSON.stringify(handles.map((h) => ({ id: h.id, outcome: h.outcome })))}\n`),
    (err: Error) => process.stdout.write(`done ${tag} ${JSON.stringify({ error: err.message })}\n`),
  );
});
