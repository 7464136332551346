import { mkdir, mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { INestApplication } from '@nestjs/common';
import { WorkflowClient, WorkflowFailedError } from 'nestjs-durable';
import request from 'supertest';
import { createTestDatabase, type TestDatabase } from '../support/db.js';
import { startExampleApp } from './support/example-app.js';

/** The example's way to see a run fail and be resumed: the daily sales report into a missing directory. */
describe('example shop: a FAILED run, fixed and resumed (daily sales report)', () => {
  let db: TestDatabase;
  let app: INestApplication;
  let dir: string;
  beforeAll(async () => {
    db = await createTestDatabase('example_report');
    dir = join(await mkdtemp(join(tmpdir(), 'durable-reports-')), 'missing');
    app = await startExampleApp(db.url, { env: { REPORTS_DIR: dir } });
  });
  afterAll(async () => {
    await app?.close();
    await db?.drop();
    await rm(join(dir, '..'), { recursive: true, force: true });
  });

  it('fails after three attempts when the directory is missing; resumed once it exists, it writes the same tally', async () => {
    const api = () => request(app.getHttpServer());
    await api().post('/orders').send({ customer: 'Ada', email: 'ada@example.com', sku: 'mug', quantity: 2 }).expect(201);
    const day = new Date().toISOString().slice(0, 10);
    const res = await api().post('/reports').send({ day }).expect(202);
    expect(res.body).toEqual({ runId: `sales-report:${day}`, day });
    await api().post('/reports').send({ day: '2026-13-45' }).expect(400);

    const client = app.get(WorkflowClient);
    const handle = client.handle(res.body.runId);
    const err = (await handle.result({ timeoutMs: 15_000 }).catch((e: unknown) => e)) as WorkflowFailedError;
    expect(err).toBeInstanceOf(WorkflowFailedError);
    expect(err.runError).toMatchObject({ message: expect.stringContaining('ENOENT') });
    const failed = (await client.getRun(handle.id))!;
    expect(failed.steps.map((s) => [s.name, s.status, s.attempts])).toEqual([
      ['tally', 'SUCCEEDED', 1],
      ['publish', 'FAILED', 3],
    ]);

    await mkdir(dir);
    await client.resume(handle.id);
    const done = (await handle.result({ timeoutMs: 15_000 })) as { file: string; tally: { orders: Record<string, number> } };
    expect(done.file).toBe(join(dir, `sales-${day}.json`));
    expect(JSON.parse(await readFile(done.file, 'utf8'))).toEqual(done.tally);
    expect(Object.values(done.tally.orders).reduce((a, b) => a + b, 0)).toBe(1);
    const steps = (await client.getRun(handle.id))!.steps;
    expect(steps.map((s) => [s.name, s.status])).toEqual([
      ['tally', 'SUCCEEDED'],
      ['publish', 'SUCCEEDED'],
    ]);
    expect(steps[0].attempts).toBe(1); // the tally was replayed, not run again
  });
});
