import { randomUUID } from 'node:crypto';
import { NotInWorkflowError } from '../errors/index.js';
import type { StepDefinition } from './definitions.js';
import { currentScope } from './run-context.js';
import { currentStepTransaction, invokeStep } from './step-runner.js';

const recorded = (name: string): StepDefinition => ({ name, options: { retries: 0 } });
const NOW = recorded('durable.now');
const RANDOM = recorded('durable.random');
const UUID = recorded('durable.uuid');

/**
 * Helpers for code running inside a workflow (and its steps). Values that differ between
 * executions (time, randomness) are recorded once and replayed identically.
 */
export const Durable = {
  /** Id of the run in scope. */
  runId(): string {
    const scope = currentScope();
    if (!scope) throw new NotInWorkflowError('Durable.runId()');
    return scope.run.runId;
  },

  /** True when called inside a running workflow or one of its steps. */
  inWorkflow(): boolean {
    return currentScope() !== undefined;
  },

  /**
   * Inside a `@Step({ transactional: true })`: the Prisma transaction client that also commits
   * the step's checkpoint. Write through it, and those writes happen exactly once.
   */
  tx<T = unknown>(): T {
    return currentStepTransaction<T>();
  },

  /** Aborted when the run's execution must stop (cancelled, lease lost, shutdown): pass it to fetch() etc. */
  signal(): AbortSignal {
    const scope = currentScope();
    if (!scope) throw new NotInWorkflowError('Durable.signal()');
    return scope.run.abort.signal;
  },

  /** Current time in ms, recorded on first execution and replayed identically. */
  async now(): Promise<number> {
    return (await invokeStep(NOW, () => Date.now())) as number;
  },

  /** Math.random(), recorded once. */
  async random(): Promise<number> {
    return (await invokeStep(RANDOM, () => Math.random())) as number;
  },

  /** A random UUID, recorded once. */
  async uuid(): Promise<string> {
    return (await invokeStep(UUID, () => randomUUID())) as string;
  },
};
