import { DurableError } from './durable-error.js';

/** The durable_* tables are missing or out of date. */
export class SchemaMissingError extends DurableError {
  constructor(readonly missing: string[]) {
    super(
      'SCHEMA_MISSING',
      `nestjs-durable cannot find ${missing.join(', ')} in the database. Copy ` +
        `node_modules/nestjs-durable/prisma/durable.prisma into your Prisma schema folder (enable ` +
        `previewFeatures = ["partialIndexes"] in the generator), then run \`npx prisma migrate dev --name durable\` ` +
        `(development) or \`npx prisma migrate deploy\` (production).`,
    );
  }
}
