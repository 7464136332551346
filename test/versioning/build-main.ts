// One build of the order app as a worker process: `node --import tsx test/versioning/build-main.ts`
// with BUILD=v1|v2 and DATABASE_URL. Prints "ready" once it claims; stops gracefully on SIGTERM.
import 'reflect-metadata';
import { serveNestApp } from '../support/worker-process.js';

const { AppModule } = (await import(process.env.BUILD === 'v2' ? './app-v2.js' : './app-v1.js')) as { AppModule: new () => unknown };
await serveNestApp(AppModule, ['error', 'warn']);
