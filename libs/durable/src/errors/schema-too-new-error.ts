import { DurableError } from './durable-error.js';

/** The durable_* tables were migrated by a newer release of the library than the one running. */
export class SchemaTooNewError extends DurableError {
  constructor(
    readonly found: number,
    readonly expected: number,
  ) {
    super(
      'SCHEMA_TOO_NEW',
      `The durable_* tables are at schema version ${found}, newer than this release of nestjs-durable knows ` +
        `(version ${expected}): a newer release migrated them. Upgrade the nestjs-durable package of this app ` +
        `(\`npm install nestjs-durable@latest\`) to the release that migrated them or a later one.`,
    );
  }
}
