import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { DurableEngine } from 'nestjs-durable';
import type { PrismaClient } from '../../src/generated/prisma/client.js';
import { clientEngine } from '../support/client-engine.js';
import { createTestDatabase, type TestDatabase } from '../support/db.js';
import { eventually } from '../support/engine-harness.js';
import { OtelTestSdk } from '../support/otel.js';
import { WorkerProcess } from '../support/processes.js';
import { prismaFor } from '../support/prisma.js';
import { readSpanFile } from '../support/span-file.js';

/**
 * Telemetry across real processes killed with SIGKILL: the trace a run was started in continues on
 * the process that recovers it, and a lifecycle hook interrupted by a crash is delivered again by
 * another process.
 */
describe('telemetry across processes', () => {
  let db: TestDatabase;
  let prisma: PrismaClient;
  let client: DurableEngine;
  let sdk: OtelTestSdk;
  let dir: string;
  const workers: WorkerProcess[] = [];
  const q = async <T = any>(sql: string, params: unknown[] = []) => (await prisma.$queryRawUnsafe(sql, ...params)) as T[];
  const spawnWorker = async (env: Record<string, string> = {}) => {
    const w = await WorkerProcess.start(db.url, env);
    workers.push(w);
    return w;
  };

  beforeAll(async () => {
    sdk = OtelTestSdk.register(); // before the client engine starts: it stores the active span with each run
    db = await createTestDatabase('telemetry_proc');
    prisma = prismaFor(db.url);
    client = await clientEngine(db.url, prisma);
    dir = mkdtempSync(join(tmpdir(), 'durable-spans-'));
    await q(`CREATE TABLE test_hook_deliveries (event_id bigint, type text, run_id text, workflow text, pid int,
             at timestamptz DEFAULT clock_timestamp())`);
  });
  afterEach(async () => {
    await Promise.all(workers.splice(0).map((w) => w.stop()));
  });
  afterAll(async () => {
    await client.stop();
    await prisma.$disconnect();
    await db.drop();
    await sdk.shutdown();
    rmSync(dir, { recursive: true, force: true });
  });

  it('SIGKILL mid-step: the process that recovers the run continues the trace it was started in', async () => {
    const fileA = join(dir, 'a.jsonl');
    const fileB = join(dir, 'b.jsonl');
    const a = await spawnWorker({ DURABLE_TEST_SPAN_FILE: fileA });
    let root!: { traceId: string; spanId: string };
    const handle = await sdk.tracer.startActiveSpan('POST /orders', async (span) => {
      root = span.spanContext();
      try {
        return await client.startRun('counted', { steps: 3, slowStep: 1, slowMs: 60_000, slowPid: a.pid });
      } finally {
        span.end();
      }
    });
    await eventually(async () => (await q(`SELECT 1 FROM test_step_executions WHERE run_id = $1 AND step = 's1'`, [handle.id])).length > 0);
    a.kill('SIGKILL');
    await a.exit();
    const b = await spawnWorker({ DURABLE_TEST_SPAN_FILE: fileB });
    await client.handle(handle.id).result({ timeoutMs: 30_000 });

    // A ended the span of step #0 before it died; its execution's span died with it.
    const spansA = readSpanFile(fileA).filter((s) => s.attributes['durable.run_id'] === handle.id);
    expect(spansA.map((s) => [s.name, s.attributes['durable.step.seq']])).toEqual([['durable.step count', 0]]);
    expect(spansA[0].traceId).toBe(root.traceId);

    // B: a second execution (attempt 2) whose parent is the HTTP span, and the two remaining steps under it.
    const spansB = readSpanFile(fileB).filter((s) => s.attributes['durable.run_id'] === handle.id);
    const runB = spansB.find((s) => s.name === 'durable.run counted')!;
    expect(runB).toMatchObject({ traceId: root.traceId, parentSpanId: root.spanId, pid: b.pid });
    expect(runB.attributes).toMatchObject({ 'durable.attempt': 2, 'durable.outcome': 'SUCCEEDED' });
    const stepsB = spansB.filter((s) => s.name === 'durable.step count');
    expect(stepsB.map((s) => s.attributes['durable.step.seq'])).toEqual([1, 2]);
    for (const s of stepsB) expect(s).toMatchObject({ traceId: root.traceId, parentSpanId: runB.spanId });
    // The trace id of spansA[0]'s parent execution is the same trace: one trace from the request to the end.
    expect(new Set([...spansA, ...spansB].map((s) => s.traceId))).toEqual(new Set([root.traceId]));
  });

  it('SIGKILL during a lifecycle hook: another process delivers the same event again; the cursor moves past it', async () => {
    const a = await spawnWorker({ DURABLE_TEST_HOOKS: '1', DURABLE_TEST_HOOK_HANG: '1', DURABLE_HOOK_LEASE_MS: '1500' });
    const handle = await client.startRun('counted', { steps: 1 });
    await client.handle(handle.id).result({ timeoutMs: 20_000 });
    const seen = await eventually(
      async () => (await q(`SELECT event_id::text AS id, type, pid FROM test_hook_deliveries WHERE run_id = $1`, [handle.id]))[0],
      15_000,
      'the hook to receive run.succeeded in process A',
    );
    expect(seen).toMatchObject({ type: 'run.succeeded', pid: a.pid });
    a.kill('SIGKILL'); // the handler had not returned: its cursor is still before the event
    await a.exit();
    const [cursor] = await q(`SELECT last_event_id::text AS last FROM durable_hook_cursors WHERE consumer = 'test-hooks'`);
    expect(BigInt(cursor.last)).toBeLessThan(BigInt(seen.id));

    const b = await spawnWorker({ DURABLE_TEST_HOOKS: '1' });
    await eventually(
      async () => (await q(`SELECT 1 FROM test_hook_deliveries WHERE run_id = $1 AND pid = $2`, [handle.id, b.pid])).length > 0,
      20_000,
      'process B to deliver the event again after the lease of A expired',
    );
    const deliveries = await q(`SELECT event_id::text AS id, type, workflow, pid FROM test_hook_deliveries WHERE run_id = $1 ORDER BY at`, [
      handle.id,
    ]);
    expect(deliveries).toEqual([
      { id: seen.id, type: 'run.succeeded', workflow: 'counted', pid: a.pid },
      { id: seen.id, type: 'run.succeeded', workflow: 'counted', pid: b.pid },
    ]);
    await eventually(async () => {
      const [c] = await q(`SELECT last_event_id::text AS last, owner FROM durable_hook_cursors WHERE consumer = 'test-hooks'`);
      return BigInt(c.last) >= BigInt(seen.id);
    });
  });
});
