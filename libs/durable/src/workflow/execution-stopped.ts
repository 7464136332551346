/** Why an execution stopped before its workflow returned. */
export type StopReason =
  | 'lease-lost'
  | 'cancelled'
  | 'shutdown'
  | 'deadline'
  | 'suspended'
  | 'checkpoint-failed'
  /** The database failed over: the run is handed back and replayed from the new primary (worker.primaryChanged). */
  | 'failover';

/**
 * Thrown into workflow code when its execution must stop (lease lost, cancelled, shutting
 * down). The executor recognises it and writes nothing more for the run.
 */
export class ExecutionStopped extends Error {
  constructor(readonly reason: StopReason) {
    super(`Execution stopped: ${reason}`);
    this.name = 'ExecutionStopped';
  }
}
