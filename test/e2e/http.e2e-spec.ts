import { Body, Controller, Get, Inject, Injectable, Module, Param, Post, Scope } from '@nestjs/common';
import type { INestApplication } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import request from 'supertest';
import { DurableModule, UnknownWorkflowError, Workflow, WorkflowClient } from 'nestjs-durable';
import { adminQuery, createTestDatabase, urlFor, type TestDatabase } from '../support/db.js';
import { PrismaService, TestWorkflows, WorkerAppModule } from '../support/worker-app.js';

@Controller('runs')
class RunsController {
  constructor(@Inject(WorkflowClient) private readonly client: WorkflowClient) {}

  @Post()
  async start(@Body() body: { workflow: string; input: unknown }) {
    const handle = await this.client.start(body.workflow, body.input);
    return { id: handle.id };
  }

  @Post('typed')
  async startTyped(@Body() body: { steps: number }) {
    const handle = await this.client.start(TestWorkflows, 'counted', { steps: body.steps });
    return { id: handle.id };
  }

  @Get(':id/result')
  async result(@Param('id') id: string) {
    return { output: await this.client.handle(id).result({ timeoutMs: 10_000 }) };
  }

  @Get(':id')
  async get(@Param('id') id: string) {
    return this.client.getRun(id);
  }
}

@Module({ imports: [WorkerAppModule], controllers: [RunsController] })
class HttpAppModule {}

async function boot(module: unknown): Promise<INestApplication> {
  const ref = await Test.createTestingModule({ imports: [module as never] }).compile();
  const app = ref.createNestApplication({ logger: false });
  await app.init();
  return app;
}

describe('Nest app over HTTP', () => {
  let db: TestDatabase;
  let app: INestApplication;
  beforeAll(async () => {
    db = await createTestDatabase('http');
    process.env.DATABASE_URL = db.url;
    app = await boot(HttpAppModule);
  });
  afterAll(async () => {
    await app?.close();
    await db.drop();
  });

  it('starts a workflow over HTTP and reads its result and steps', async () => {
    const { body } = await request(app.getHttpServer())
      .post('/runs')
      .send({ workflow: 'counted', input: { steps: 2 } })
      .expect(201);
    const res = await request(app.getHttpServer()).get(`/runs/${body.id}/result`).expect(200);
    expect(res.body.output).toEqual({ pids: [process.pid, process.pid], finishedBy: process.pid });
    const run = await request(app.getHttpServer()).get(`/runs/${body.id}`).expect(200);
    expect(run.body).toMatchObject({ id: body.id, workflowName: 'counted', status: 'SUCCEEDED', input: { steps: 2 } });
    expect(run.body.steps.map((s: { name: string; seq: number }) => [s.seq, s.name])).toEqual([
      [0, 'count'],
      [1, 'count'],
    ]);
  });

  it('starts by class and method (typed form)', async () => {
    const { body } = await request(app.getHttpServer()).post('/runs/typed').send({ steps: 1 }).expect(201);
    const res = await request(app.getHttpServer()).get(`/runs/${body.id}/result`).expect(200);
    expect(res.body.output.pids).toHaveLength(1);
  });

  it('commits the run only with the caller transaction (start inside $transaction)', async () => {
    const client = app.get(WorkflowClient);
    const prisma = app.get(PrismaService);
    const committed = await prisma.$transaction(async (tx) => client.start('counted', { steps: 1 }, { tx }));
    expect(await committed.result({ timeoutMs: 10_000 })).toMatchObject({ pids: [process.pid] });
    let rolledBackId = '';
    await expect(
      prisma.$transaction(async (tx) => {
        rolledBackId = (await client.start('counted', { steps: 1 }, { tx })).id;
        throw new Error('business rule failed');
      }),
    ).rejects.toThrow('business rule failed');
    expect(await client.getRun(rolledBackId)).toBeNull();
  });

  it('rejects an unknown workflow with the list of registered names', async () => {
    const client = app.get(WorkflowClient);
    await expect(client.start('nope', {})).rejects.toThrow(UnknownWorkflowError);
    await expect(client.start('nope', {})).rejects.toThrow(
      /Known workflows: "backfillLedger", "callbackAfterKill", "counted", "countedJob", "fanOutLedger", "streamTicker", "tenantEcho"/,
    );
  });
});

describe('boot-time errors', () => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await createTestDatabase('boot');
    process.env.DATABASE_URL = db.url;
  });
  afterAll(() => db.drop());

  @Injectable()
  class First {
    @Workflow({ name: 'same' }) async a() {}
  }
  @Injectable()
  class Second {
    @Workflow({ name: 'same' }) async b() {}
  }
  @Injectable({ scope: Scope.REQUEST })
  class PerRequest {
    @Workflow() async perRequest() {}
  }

  const withDurable = (providers: unknown[], options: Record<string, unknown> = {}) => {
    @Module({
      imports: [DurableModule.forRoot({ prisma: PrismaService, ...options })],
      providers: [PrismaService, ...(providers as never[])],
    })
    class M {}
    return M;
  };

  it('fails on duplicate workflow names, naming both methods', async () => {
    await expect(boot(withDurable([First, Second]))).rejects.toThrow(/Two workflows are named "same": First\.a\(\) and Second\.b\(\)/);
  });

  it('fails on a request-scoped workflow provider', async () => {
    await expect(boot(withDurable([PerRequest]))).rejects.toThrow(
      /PerRequest\.perRequest\(\) is a @Workflow\(\) on a request-scoped provider/,
    );
  });

  it('discovers @Workflow() methods on factory and value providers too, through their instance', async () => {
    class Made {
      @Workflow({ name: 'fromFactory' }) async made(input: { n: number }) {
        return input.n * 2;
      }
    }
    class Given {
      @Workflow({ name: 'fromValue' }) async given(input: { n: number }) {
        return input.n + 1;
      }
    }
    const app = await boot(
      withDurable(
        [
          { provide: 'MADE', useFactory: () => new Made() },
          { provide: 'GIVEN', useValue: new Given() },
        ],
        { pollIntervalMs: 50 },
      ),
    );
    try {
      const client = app.get(WorkflowClient);
      expect(await (await client.start('fromFactory', { n: 21 })).result({ timeoutMs: 10_000 })).toBe(42);
      expect(await (await client.start('fromValue', { n: 41 })).result({ timeoutMs: 10_000 })).toBe(42);
      expect(await (await client.start(Made, 'made', { n: 1 })).result({ timeoutMs: 10_000 })).toBe(2);
      // Neither call form can be taken for the other: a class names its workflow through the method.
      await expect(client.start(42 as never, { n: 1 })).rejects.toMatchObject({ code: 'INVALID_ARGUMENT', parameter: 'workflowName' });
      await expect(client.start(Made, 'nope' as never, { n: 1 })).rejects.toThrow(/Made\.nope\(\) is not marked @Workflow\(\)/);
    } finally {
      await app.close();
    }
  });

  it('fails on invalid options with every problem listed', async () => {
    await expect(boot(withDurable([First], { leaseMs: 10, concurrency: 0 }))).rejects.toThrow(
      /concurrency must be an integer between 1 and 10000 \(got 0\); leaseMs must be an integer between 100/,
    );
  });

  it('fails when the tables are missing, saying which migration to run', async () => {
    const empty = `durable_test_empty_${process.pid}`;
    await adminQuery(`CREATE DATABASE ${empty}`);
    try {
      process.env.DATABASE_URL = urlFor(empty);
      await expect(boot(withDurable([First]))).rejects.toThrow(/cannot find table durable_runs.*prisma migrate dev/);
    } finally {
      process.env.DATABASE_URL = db.url;
      await adminQuery(`DROP DATABASE ${empty} WITH (FORCE)`);
    }
  });
});
