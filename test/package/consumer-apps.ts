/**
 * The source files the consumer matrix adds to each fixture app (test/package/apps/<name>): what a
 * user writes when following the steps of docs/getting-started.md (and libs/durable/README.md), in the app's own module
 * system. They live here as text because they import the app's generated Prisma client, which
 * exists only once the test has run `prisma generate` in the app's folder.
 */
export type ModuleFormat = 'cjs' | 'esm';
/** The app's datasource provider: PostgreSQL through `@prisma/adapter-pg`, MariaDB through `@prisma/adapter-mariadb`. */
export type Provider = 'postgresql' | 'mysql';

/**
 * `prisma/schema.prisma` as `prisma init` (Prisma 7) writes it, with the module format of the app
 * (Prisma's NestJS guide) and the app's own model, written in the same transaction as the run.
 * `npx nestjs-durable init` turns the folder into a schema folder and adds the package's models.
 */
export function schemaPrisma(format: ModuleFormat, provider: Provider = 'postgresql'): string {
  const moduleFormat = format === 'esm' ? `  moduleFormat        = "esm"\n  importFileExtension = "js"\n` : `  moduleFormat = "cjs"\n`;
  return `generator client {
  provider = "prisma-client"
  output   = "../src/generated/prisma"
${moduleFormat}}

datasource db {
  provider = "${provider}"
}

model Greeting {
  id   String  @id
  name String
  text String?

  @@map("greetings")
}
`;
}

/** `prisma.config.ts` as `prisma init` writes it, without its `import "dotenv/config"` (the test sets the environment). */
export const PRISMA_CONFIG = `import { defineConfig } from "prisma/config";

export default defineConfig({
  schema: "prisma/schema.prisma",
  migrations: {
    path: "prisma/migrations",
  },
  datasource: {
    url: process.env["DATABASE_URL"],
  },
});
`;

/** What `main.ts` prints on its last line. */
export interface ScenarioReport {
  committed: { id: string; committed: boolean };
  rolledBack: { id: string; committed: boolean };
  result: { text: string; runId: string };
  adminWithoutToken: number;
  adminRun: { id: string; status: string };
  swaggerPaths: string[];
  engineEntry: string[];
}

/** The app's `src/` files (path relative to src → text). */
export function appSources(format: ModuleFormat, provider: Provider = 'postgresql'): Record<string, string> {
  // Relative imports as each template writes them: extensionless in CommonJS, `.js` in ESM.
  const x = format === 'esm' ? '.js' : '';
  // The driver adapter as Prisma's guides write it for each database (the MariaDB one takes a mariadb:// URL).
  const adapter =
    provider === 'mysql'
      ? {
          from: `import { PrismaMariaDb } from '@prisma/adapter-mariadb';`,
          make: `new PrismaMariaDb(process.env.DATABASE_URL!.replace(/^mysql:/, 'mariadb:'))`,
        }
      : {
          from: `import { PrismaPg } from '@prisma/adapter-pg';`,
          make: `new PrismaPg({ connectionString: process.env.DATABASE_URL, connectionTimeoutMillis: 10_000 })`,
        };
  return {
    'prisma.service.ts': `import { Injectable, OnApplicationShutdown } from '@nestjs/common';
${adapter.from}
import { PrismaClient } from './generated/prisma/client${x}';

@Injectable()
export class PrismaService extends PrismaClient implements OnApplicationShutdown {
  constructor() {
    super({ adapter: ${adapter.make} });
  }

  async onApplicationShutdown(): Promise<void> {
    await this.$disconnect();
  }
}
`,
    'greetings.workflow.ts': `import { Injectable } from '@nestjs/common';
import { Durable, Step, Workflow } from 'nestjs-durable';
import type { Prisma } from './generated/prisma/client${x}';

@Injectable()
export class GreetingSteps {
  // Exactly once: the update and the step's checkpoint commit in one Prisma transaction.
  @Step({ transactional: true })
  async write(id: string, name: string): Promise<string> {
    const tx = Durable.tx<Prisma.TransactionClient>();
    const text = 'hello ' + name;
    await tx.greeting.update({ where: { id }, data: { text } });
    return text;
  }
}

@Injectable()
export class GreetingWorkflows {
  constructor(private readonly steps: GreetingSteps) {}

  @Workflow({ name: 'greet' })
  async greet(input: { id: string; name: string }): Promise<{ text: string; runId: string }> {
    const text = await this.steps.write(input.id, input.name);
    return { text, runId: Durable.runId() };
  }
}
`,
    'greetings.controller.ts': `import { Body, Controller, Get, Param, Post } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import { WorkflowClient } from 'nestjs-durable';
import { PrismaService } from './prisma.service${x}';

@Controller('greetings')
export class GreetingsController {
  constructor(
    private readonly prisma: PrismaService,
    private readonly workflows: WorkflowClient,
  ) {}

  /** The greeting and its workflow run in one transaction: both or neither. */
  @Post()
  async create(@Body() body: { name: string; fail?: boolean }): Promise<{ id: string; committed: boolean }> {
    const id = randomUUID();
    try {
      await this.prisma.$transaction(async (tx) => {
        await tx.greeting.create({ data: { id, name: body.name } });
        await this.workflows.start('greet', { id, name: body.name }, { tx, id });
        if (body.fail) throw new Error('rolled back on purpose');
      });
    } catch (e) {
      if (!body.fail) throw e;
      return { id, committed: false };
    }
    return { id, committed: true };
  }

  @Get(':id/result')
  result(@Param('id') id: string): Promise<unknown> {
    return this.workflows.handle(id).result({ timeoutMs: 20_000 });
  }
}
`,
    'admin.guard.ts': `import { CanActivate, ExecutionContext, Injectable } from '@nestjs/common';

@Injectable()
export class AdminGuard implements CanActivate {
  canActivate(context: ExecutionContext): boolean {
    return context.switchToHttp().getRequest<{ headers: Record<string, string | undefined> }>().headers['x-admin-token'] === 'secret';
  }
}
`,
    'app.module.ts': `import { Module } from '@nestjs/common';
import { DurableModule } from 'nestjs-durable';
import { AdminGuard } from './admin.guard${x}';
import { GreetingsController } from './greetings.controller${x}';
import { GreetingSteps, GreetingWorkflows } from './greetings.workflow${x}';
import { PrismaService } from './prisma.service${x}';

@Module({
  imports: [DurableModule.forRoot({ prisma: PrismaService, pollIntervalMs: 200, admin: { guards: [AdminGuard] } })],
  controllers: [GreetingsController],
  providers: [PrismaService, GreetingSteps, GreetingWorkflows],
})
export class AppModule {}
`,
    // A real HTTP app on a free port that drives itself through its own endpoints, prints what it
    // saw and closes; the test then checks the database on its own.
    'main.ts': `import { NestFactory } from '@nestjs/core';
import { DocumentBuilder, SwaggerModule } from '@nestjs/swagger';
import { AppModule } from './app.module${x}';
import * as engine from 'nestjs-durable/engine';

async function bootstrap() {
  const app = await NestFactory.create(AppModule, { logger: ['error', 'warn'] });
  app.enableShutdownHooks();
  await app.listen(0, '127.0.0.1');
  const url = (await app.getUrl()).replace('[::1]', '127.0.0.1');
  const call = async (method: string, path: string, body?: unknown, headers: Record<string, string> = {}) => {
    const res = await fetch(url + path, { method, headers: { 'content-type': 'application/json', ...headers }, body: body === undefined ? undefined : JSON.stringify(body) });
    return { status: res.status, body: (await res.json()) as any };
  };
  const committed = (await call('POST', '/greetings', { name: 'Ada' })).body;
  const rolledBack = (await call('POST', '/greetings', { name: 'Bob', fail: true })).body;
  const result = (await call('GET', '/greetings/' + committed.id + '/result')).body;
  const adminWithoutToken = (await call('GET', '/durable/runs/' + committed.id)).status;
  const adminRun = (await call('GET', '/durable/runs/' + committed.id, undefined, { 'x-admin-token': 'secret' })).body;
  const doc = SwaggerModule.createDocument(app, new DocumentBuilder().setTitle('consumer').build());
  const report = {
    committed,
    rolledBack,
    result,
    adminWithoutToken,
    adminRun: { id: adminRun.id, status: adminRun.status },
    swaggerPaths: Object.keys(doc.paths).filter((p) => p.startsWith('/durable/')),
    engineEntry: Object.keys(engine).sort(),
  };
  await app.close();
  console.log(JSON.stringify(report));
}
${format === 'esm' ? 'await bootstrap();' : 'bootstrap();'}
`,
  };
}
