import type { EngineContext } from './engine-context.js';

/** Where a triggered run goes when its workflow is not registered in this process (the command line). */
export interface RunPlacement {
  queue: string;
  priority?: number;
  timeoutMs?: number | null;
}

/** The registered name; with requireRegistered false (the command line) also a name this process does not register. */
export const workflowName = (e: EngineContext, name: string, requireRegistered: boolean): string =>
  requireRegistered || e.registry.has(name) ? e.registry.get(name).name : name;

/** The queue, priority and timeout of a triggered run: the registered definition's, else the given placement's. */
export function placementOf(e: EngineContext, name: string, unregistered: RunPlacement | undefined) {
  if (!unregistered || e.registry.has(name)) return e.registry.get(name);
  return { queue: unregistered.queue, options: { priority: unregistered.priority, timeoutMs: unregistered.timeoutMs ?? undefined } };
}
