// The example shop: `npm start` (see README). Without DATABASE_URL it first starts an embedded
// Postgres (PGlite) inside this process, with the Prisma migrations applied.
import 'reflect-metadata';
import { Logger } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { AppModule } from './app.module.js';
import { appConfigFromEnv } from './config/app-config.js';
import { startEmbeddedPostgres, type EmbeddedPostgres } from './embedded-postgres/index.js';
import { closeOnSignal } from './shutdown.js';

/** Connections beyond the app's pools, e.g. for `psql` or Prisma Studio against the embedded database. */
const SPARE_CONNECTIONS = 4;

const log = new Logger('Main');
const config = appConfigFromEnv(process.env, { embedded: !process.env.DATABASE_URL });

let embedded: EmbeddedPostgres | null = null;
if (config.embedded) {
  log.log('no DATABASE_URL: starting the embedded Postgres (PGlite)…');
  embedded = await startEmbeddedPostgres({
    dataDir: process.env.EMBEDDED_PG_DIR ?? '.data/pglite',
    migrationsDir: 'prisma/migrations',
    // Prisma's pool + the library's pool + its LISTEN connection.
    maxConnections: config.prismaPoolSize + config.durable.poolSize + 1 + SPARE_CONNECTIONS,
    log: (m) => log.log(m),
  });
  log.log(`embedded Postgres ready in ${embedded.startupMs} ms (data in ${embedded.dataDir})`);
  config.databaseUrl = embedded.url;
  process.env.DATABASE_URL = embedded.url; // for anything else that reads it
}

const app = await NestFactory.create(AppModule.forRoot(config));
if (embedded) {
  const db = embedded;
  closeOnSignal(app, () => db.stop()); // the embedded database closes after Nest
} else {
  app.enableShutdownHooks(); // SIGTERM/SIGINT: in-flight steps finish, leases are handed back
}
await app.listen(config.port, '127.0.0.1');
const url = (await app.getUrl()).replace('127.0.0.1', 'localhost');
log.log(`example shop on ${url}  (${embedded ? `embedded Postgres, data in ${embedded.dataDir}` : 'Postgres from DATABASE_URL'})`);
log.log(`admin dashboard: ${url}/durable/  (token: ${config.adminToken}${process.env.ADMIN_TOKEN ? ' from ADMIN_TOKEN' : ', made up for this run: set ADMIN_TOKEN to choose one'})`);
log.log(`place an order: curl -s -X POST ${url}/orders -H 'content-type: application/json' -d '{"customer":"Ada","email":"ada@example.com","sku":"grinder","quantity":1}'`);
