import { errorText } from '../errors/error-text.js';
import type { DurableLogger } from '../config/options.js';
import { BACKOFF, backoffMs } from './backoff.js';

/**
 * Logs a failing database operation once per outage (not once per attempt), and its
 * recovery once, so a Postgres restart gives two log lines instead of thousands.
 */
export class OutageLog {
  private failingSince: number | null = null;
  private failures = 0;

  constructor(
    private readonly what: string,
    private readonly logger: DurableLogger,
  ) {}

  failed(err: unknown): void {
    this.failures++;
    if (this.failingSince !== null) return;
    this.failingSince = Date.now();
    this.logger.error(`${this.what} failed: ${errorText(err)}; retrying with back-off (logged once per outage)`);
  }

  ok(): void {
    if (this.failingSince === null) return;
    this.logger.log(`${this.what} works again after ${Date.now() - this.failingSince} ms and ${this.failures} failed attempts`);
    this.failingSince = null;
    this.failures = 0;
  }

  /** Back-off delay for the next attempt while failing (BACKOFF.outage); 0 while things work. */
  backoffMs(): number {
    return this.failingSince === null ? 0 : backoffMs(BACKOFF.outage, this.failures);
  }
}
