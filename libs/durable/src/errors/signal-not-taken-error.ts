import { DurableError } from './durable-error.js';

/** A signal sent to a run whose workflow declares other signals (@Workflow({ signals })): nothing was delivered. */
export class SignalNotTakenError extends DurableError {
  constructor(
    readonly runId: string,
    readonly workflowName: string,
    readonly signal: string,
    readonly takes: string[],
  ) {
    super(
      'SIGNAL_NOT_TAKEN',
      `Run "${runId}" (workflow ${workflowName}) does not take signal "${signal}": its workflow declares ` +
        `${takes.length ? takes.map((s) => `"${s}"`).join(', ') : 'no signal'} in @Workflow({ signals }) (add it there if its runs wait for it).`,
    );
  }
}
