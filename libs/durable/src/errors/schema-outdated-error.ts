import { DurableError } from './durable-error.js';

/** The durable_* tables are at an older schema version than this release of the library needs. */
export class SchemaOutdatedError extends DurableError {
  constructor(
    readonly found: number,
    readonly expected: number,
    /** The package's upgrade SQL files, in the order to apply them (for apps with their own SQL migrations). */
    readonly upgradeFiles: string[],
  ) {
    super(
      'SCHEMA_OUTDATED',
      `The durable_* tables are at schema version ${found}; this release of nestjs-durable needs version ${expected}. ` +
        `With Prisma migrations: run \`npx nestjs-durable init --upgrade\`, then \`npx prisma migrate dev --name durable_v${expected}\` ` +
        `(production: \`npx prisma migrate deploy\`). With your own SQL migrations: add ` +
        `${upgradeFiles.map((f) => `node_modules/nestjs-durable/${f}`).join(', then ')} to them.`,
    );
  }
}
