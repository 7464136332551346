// One build of the order app as a worker process: `node --import tsx test/versioning/build-main.ts`
// with BUILD=v1|v2 and DATABASE_URL. Prints "ready" once it claims; stops gracefully on SIGTERM.
import 'reflect-metadata';
import { NestFactory } from '@nestjs/core';

const { AppModule } = (await import(process.env.BUILD === 'v2' ? './app-v2.js' : './app-v1.js')) as { AppModule: new () => unknown };
const app = await NestFactory.createApplicationContext(AppModule, { logger: ['error', 'warn'] });
app.enableShutdownHooks();
await app.init();
process.stdout.write('ready\n');
