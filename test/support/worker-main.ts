// A test worker process: `tsx test/support/worker-main.ts` with DATABASE_URL set.
// Prints "ready" once the worker claims; exits gracefully on SIGTERM.
import 'reflect-metadata';
import { NestFactory } from '@nestjs/core';
import { WorkerAppModule } from './worker-app.js';

const app = await NestFactory.createApplicationContext(WorkerAppModule, { logger: ['error', 'warn', 'log'] });
app.enableShutdownHooks();
await app.init();
process.stdout.write('ready\n');
