import { DurableEngine, WorkflowRegistry } from 'nestjs-durable';
import type { PrismaClient } from '../../src/generated/prisma/client.js';

/**
 * An engine that only starts and reads runs (worker: false), for a test process that drives
 * worker child processes. It knows the names of the child app's workflows.
 */
export async function clientEngine(url: string, prisma: PrismaClient, names = ['counted']): Promise<DurableEngine> {
  const registry = new WorkflowRegistry();
  for (const name of names) registry.register({ name, queue: 'default', options: {}, run: async () => undefined });
  const engine = new DurableEngine({ registry, connection: url, prisma: prisma as never, options: { worker: false } });
  await engine.start();
  return engine;
}
