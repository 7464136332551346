import { HttpException, HttpStatus } from '@nestjs/common';
import type { SqlClient } from '../../store/sql-client.js';

/**
 * The admin API shares the engine's connection pool with claims and heartbeats. This gate
 * lets at most `max` admin statements run at once, so a busy dashboard (or a flood of API
 * calls) can never take the connections heartbeats need; past `maxWaiting` queued statements
 * it answers 429 instead of queueing without bound.
 */
export class StatementGate {
  private running = 0;
  private readonly waiting: Array<() => void> = [];

  constructor(
    private readonly max = 3,
    private readonly maxWaiting = 200,
  ) {}

  /** `sql` with every statement passing through the gate. */
  wrap(sql: SqlClient): SqlClient {
    return {
      dialect: sql.dialect,
      query: (statement, params) => this.run(() => sql.query(statement, params)),
      execute: (statement, params) => this.run(() => sql.execute(statement, params)),
      transaction: (fn) => this.run(() => sql.transaction(fn)),
    };
  }

  async run<T>(fn: () => Promise<T>): Promise<T> {
    if (this.running >= this.max) {
      if (this.waiting.length >= this.maxWaiting) {
        throw new HttpException(
          { statusCode: 429, error: 'Too Many Requests', message: 'The durable admin API is busy; retry in a moment.' },
          HttpStatus.TOO_MANY_REQUESTS,
        );
      }
      await new Promise<void>((resolve) => this.waiting.push(resolve));
    } else {
      this.running++;
    }
    try {
      return await fn();
    } finally {
      const next = this.waiting.shift();
      if (next) next();
      else this.running--;
    }
  }
}
