export { startEmbeddedPostgres, serverUrl, type EmbeddedPostgres, type EmbeddedPostgresOptions } from './embedded-postgres/embedded-postgres.js';
