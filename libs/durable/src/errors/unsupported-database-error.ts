import { DurableError } from './durable-error.js';

/**
 * The database server, or a feature on it, is not one nestjs-durable supports: a MySQL server
 * (untested: allowed only with the engine option `allowUntestedMysql`), a MariaDB older than 10.6
 * (no SKIP LOCKED), or a feature configured that is not available on MySQL-family databases yet.
 * `feature` names what was refused.
 */
export class UnsupportedDatabaseError extends DurableError {
  constructor(
    readonly feature: string,
    message: string,
  ) {
    super('UNSUPPORTED_DATABASE', message);
  }
}
