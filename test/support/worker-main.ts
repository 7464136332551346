// A test worker process: `tsx test/support/worker-main.ts` with DATABASE_URL set.
// Prints "ready" once the worker claims; exits gracefully on SIGTERM.
import 'reflect-metadata';
import { registerSpanFile } from './span-file.js';
import { WorkerAppModule } from './worker-app.js';
import { serveNestApp } from './worker-process.js';

// OpenTelemetry (the official SDK) before the app starts, when a test asks for this process's spans.
if (process.env.DURABLE_TEST_SPAN_FILE) registerSpanFile(process.env.DURABLE_TEST_SPAN_FILE);

await serveNestApp(WorkerAppModule);
