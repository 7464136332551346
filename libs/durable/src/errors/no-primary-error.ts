import { DurableError } from './durable-error.js';

/**
 * None of the hosts of a multi-host connection URL is a primary right now: during a failover, the
 * old primary is gone and the standby is not promoted yet. Statements are retried (like any lost
 * connection) until one host answers as the primary; `hosts` says what each one answered.
 */
export class NoPrimaryError extends DurableError {
  constructor(readonly hosts: ReadonlyArray<{ host: string; answer: string }>) {
    super(
      'NO_PRIMARY',
      `No primary among the database hosts: ${hosts.map((h) => `${h.host} (${h.answer})`).join(', ')}. ` +
        `During a failover this lasts until a standby is promoted; otherwise check the hosts in the connection URL.`,
    );
  }
}
