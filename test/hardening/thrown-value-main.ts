// A process that runs workflows throwing values String() cannot convert, with OpenTelemetry tracing
// registered: its bundle (test/support/processes.ts) with DATABASE_URL set. It prints
// each run's stored error and exits 0; an uncaught exception would end it with code 1.
import { Durable, DurableEngine, WorkflowRegistry } from 'nestjs-durable';
import { OtelTestSdk } from '../support/otel.js';

OtelTestSdk.register();
const registry = new WorkflowRegistry();
const revoked = () => {
  const { proxy, revoke } = Proxy.revocable({}, {});
  revoke();
  return proxy;
};
registry.register({
  name: 'nullPrototypeFromStep',
  queue: 'default',
  options: {},
  run: async () =>
    Durable.step(
      'throws',
      async () => {
        throw Object.create(null);
      },
      { retries: { maxAttempts: 1 } },
    ),
});
registry.register({
  name: 'revokedProxyFromWorkflow',
  queue: 'default',
  options: {},
  run: async () => {
    throw revoked();
  },
});
const quiet = { log: () => {}, warn: () => {}, error: () => {}, debug: () => {} };
const engine = new DurableEngine({ registry, connection: process.env.DATABASE_URL!, options: { logger: quiet, pollIntervalMs: 100 } });
await engine.start();
for (const name of ['nullPrototypeFromStep', 'revokedProxyFromWorkflow']) {
  const handle = await engine.startRun(name, null);
  await handle.result({ timeoutMs: 20_000 }).catch(() => {});
  const run = await engine.getRun(handle.id);
  process.stdout.write(`${name} ${run?.status}: ${(run?.error as { message?: string } | null)?.message}\n`);
}
await engine.stop();
