export { startEmbeddedPostgres, type EmbeddedPostgres, type EmbeddedPostgresOptions } from './embedded-postgres.js';
