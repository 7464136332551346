// A chaos worker process: `node --import tsx test/chaos/chaos-worker.ts` with DATABASE_URL set.
// Prints "ready" once it claims; exits gracefully on SIGTERM. Any other exit is a crash the
// driver reports (e.g. an unhandled error while Postgres restarts).
import 'reflect-metadata';
import { serveNestApp } from '../support/worker-process.js';
import { ChaosAppModule } from './chaos-app.js';

await serveNestApp(ChaosAppModule);
