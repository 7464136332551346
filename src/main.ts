// The example shop: `npm start` (see README). Without DATABASE_URL it first starts (or finds
// running) an embedded Postgres in .data/postgres, with the Prisma migrations applied; with a
// mysql:// DATABASE_URL it runs on MariaDB, creating the database's tables if it has none.
import 'reflect-metadata';
import { Logger } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { AppModule } from './app.module.js';
import { appConfigFromEnv } from './config/app-config.js';
import { startEmbeddedPostgres, type EmbeddedPostgres } from 'nestjs-durable/embedded-postgres';
import { ensureMariaDbTables, isMariaDbUrl } from './database/mariadb-tables.js';
import { configureHttp } from './http/http-setup.js';
import { SHIPMENT_SIGNATURE_HEADER } from './orders/shipment-signature.js';
import { closeOnSignal } from './shutdown.js';
import { startTelemetry, type TraceExport } from './telemetry/otel.js';

const log = new Logger('Main');

let embedded: EmbeddedPostgres | null = null;
if (process.env.DATABASE_URL && isMariaDbUrl(process.env.DATABASE_URL)) {
  await ensureMariaDbTables(process.env.DATABASE_URL, (m) => log.log(m));
} else if (!process.env.DATABASE_URL) {
  log.log('no DATABASE_URL: using the embedded Postgres…');
  embedded = await startEmbeddedPostgres({
    dataDir: process.env.EMBEDDED_PG_DIR || '.data/postgres',
    migrationsDir: 'prisma/migrations',
    log: (m) => log.log(m),
  });
  const { server } = embedded;
  const how = server.created ? 'created and started' : server.started ? 'started' : `already running (pid ${server.pid}), connected`;
  log.log(`embedded Postgres ${how} in ${embedded.startupMs} ms: ${embedded.url} (data in ${embedded.dataDir})`);
  process.env.DATABASE_URL = embedded.url; // for anything else that reads it
}
const config = appConfigFromEnv(process.env);
// OpenTelemetry before the app: traces (OTEL_TRACES=memory|console|off) and metrics at /metrics.
if (process.env.OTEL_SDK_DISABLED !== 'true') startTelemetry((process.env.OTEL_TRACES as TraceExport | undefined) ?? 'memory');

const app = await NestFactory.create(AppModule.forRoot(config), { rawBody: true });
configureHttp(app);
if (embedded) {
  const db = embedded;
  // After Nest has shut down: the last process using the embedded server stops it.
  closeOnSignal(app, async () => log.log(await db.leave()));
} else {
  app.enableShutdownHooks(); // SIGTERM/SIGINT: in-flight steps finish, leases are handed back
}
await app.listen(config.port, '127.0.0.1');
const url = (await app.getUrl()).replace('127.0.0.1', 'localhost');
log.log(
  `example shop on ${url}  (${embedded ? `embedded Postgres, data in ${embedded.dataDir}` : isMariaDbUrl(config.databaseUrl) ? 'MariaDB from DATABASE_URL' : 'Postgres from DATABASE_URL'})`,
);
log.log(
  config.adminTokenMadeUp
    ? `admin dashboard: ${url}/durable/  (token: ${config.adminToken}, made up for this run: set ADMIN_TOKEN to choose one)`
    : `admin dashboard: ${url}/durable/  (token: the one in ADMIN_TOKEN)`,
);
log.log(
  config.shipmentWebhookSecretMadeUp
    ? `shipment webhook secret: ${config.shipmentWebhookSecret} (made up for this run: set SHIPMENT_WEBHOOK_SECRET to choose one); sign each webhook with ${SHIPMENT_SIGNATURE_HEADER}: sha256=<HMAC-SHA256 of "<order id>.<body>">`
    : `shipment webhook: signed with SHIPMENT_WEBHOOK_SECRET in ${SHIPMENT_SIGNATURE_HEADER}`,
);
log.log(
  process.env.APPROVER_TOKEN
    ? `refund approvers: the token in APPROVER_TOKEN (or the admin token)`
    : `refund approvers' token: ${config.returns.approverToken} (made up for this run: set APPROVER_TOKEN to choose one; the admin token works too)`,
);
log.log(`shop assistant (a streamed answer): ${url}/assistant`);
log.log(`metrics: ${url}/metrics (Prometheus)  traces: ${url}/traces/<traceId> (the trace id is in the run detail of the dashboard)`);
log.log(
  `place an order: curl -s -X POST ${url}/orders -H 'content-type: application/json' -d '{"customer":"Ada","email":"ada@example.com","sku":"grinder","quantity":1}'`,
);
