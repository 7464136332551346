import { DurableError } from './durable-error.js';

/** The durable_* tables are missing or out of date. */
export class SchemaMissingError extends DurableError {
  constructor(readonly missing: string[]) {
    super(
      'SCHEMA_MISSING',
      `nestjs-durable cannot find ${missing.join(', ')} in the database. With Prisma migrations: run ` +
        `\`npx nestjs-durable init\` (adds durable.prisma to your Prisma schema folder), then ` +
        `\`npx prisma migrate dev --name durable\` (production: \`npx prisma migrate deploy\`). With your own SQL ` +
        `migrations: add node_modules/nestjs-durable/prisma/schema.sql to them.`,
    );
  }
}
