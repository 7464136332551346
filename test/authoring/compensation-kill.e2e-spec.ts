import type { DurableEngine } from 'nestjs-durable';
import { WorkflowCancelledError, WorkflowFailedError } from 'nestjs-durable';
import type { PrismaClient } from '../../src/generated/prisma/client.js';
import { clientEngine } from '../support/client-engine.js';
import { createTestDatabase, type TestDatabase } from '../support/db.js';
import { eventually } from '../support/engine-harness.js';
import { WorkerProcess } from '../support/processes.js';
import { prismaFor } from '../support/prisma.js';

/**
 * Compensation under SIGKILL (test/authoring/compensation-worker.ts): runs whose steps alternate
 * transactional (a ledger row) and plain (an execution record), each declaring its undo, fail or
 * are cancelled with compensation; the worker executing the compensations is killed twice in the
 * middle of them. Each transactional compensation commits exactly once, each plain one runs at
 * least once (at most once more per kill), and they ran newest step first.
 */
describe('authoring: SIGKILL during compensation', () => {
  const N = 8;
  const MS = 200;
  let db: TestDatabase;
  let prisma: PrismaClient;
  let client: DurableEngine;
  const workers: WorkerProcess[] = [];
  const q = async <T = any>(sql: string, params: unknown[] = []) => (await prisma.$queryRawUnsafe(sql, ...params)) as T[];
  const spawn = async () => {
    const w = await WorkerProcess.start(db.url, {}, 'test/authoring/compensation-worker.ts');
    workers.push(w);
    return w;
  };
  /** The worker process holding the run's lease (its worker id contains its pid). */
  const owner = async (id: string) => {
    const [r] = await q<{ lease_owner: string | null }>(`SELECT lease_owner FROM durable_runs WHERE id = $1`, [id]);
    return workers.find((w) => r?.lease_owner?.includes(`:${w.pid}:`));
  };
  const compensated = async (id: string) =>
    (await q<{ n: number }>(`SELECT count(*)::int AS n FROM durable_steps WHERE run_id = $1 AND compensates IS NOT NULL`, [id]))[0].n;
  /** SIGKILLs the worker executing the run once at least `after` compensations are recorded (and fewer than all). */
  const killDuringCompensation = async (id: string, after: number) => {
    const victim: WorkerProcess = await eventually(
      async () => ((await compensated(id)) >= after ? await owner(id) : undefined) as WorkerProcess,
      20_000,
      `${after} compensations recorded and the run held by a worker`,
    ).catch(async (err: Error) => {
      const run = await q(
        `SELECT status, lease_owner, lease_epoch, attempt, available_at, cancel_requested_at FROM durable_runs WHERE id = $1`,
        [id],
      );
      const steps = await q(
        `SELECT seq, name, status, compensates, error->>'message' AS e FROM durable_steps WHERE run_id = $1 ORDER BY seq`,
        [id],
      );
      const hist = await client.getRunEvents(id);
      throw new Error(
        `${err.message}\nrun ${JSON.stringify(run)}\nsteps ${JSON.stringify(steps)}\nhistory ${JSON.stringify(hist.map((h) => [h.kind, h.detail]))}\n${workers.map((w) => `--- ${w.pid}\n${w.output}`).join('\n')}`,
      );
    });
    expect(await compensated(id)).toBeLessThan(N); // still compensating
    victim.kill('SIGKILL');
    await victim.exit();
    workers.splice(workers.indexOf(victim), 1);
    spawning.push(spawn()); // a replacement, started in the background: the other worker takes the run over meanwhile
  };
  const spawning: Array<Promise<WorkerProcess>> = [];

  beforeAll(async () => {
    db = await createTestDatabase('compkill');
    prisma = prismaFor(db.url);
    client = await clientEngine(db.url, prisma, ['failingSaga', 'waitingSaga']);
  });
  afterAll(async () => {
    await Promise.all(workers.splice(0).map((w) => w.stop()));
    await client?.stop();
    await prisma?.$disconnect();
    await db?.drop();
  });

  /** Every compensation happened as promised, in reverse step order. */
  async function checkCompensations(id: string, kills: number) {
    const forward = Array.from({ length: N }, (_, i) => i);
    const ledger = await q<{ step: string; n: number; first: Date }>(
      `SELECT step, count(*)::int AS n, min(at) AS first FROM test_ledger WHERE run_id = $1 GROUP BY step`,
      [id],
    );
    const executions = await q<{ step: string; n: number; first: Date }>(
      `SELECT step, count(*)::int AS n, min(at) AS first FROM test_step_executions WHERE run_id = $1 GROUP BY step`,
      [id],
    );
    const count = (rows: Array<{ step: string; n: number }>, step: string) => rows.find((r) => r.step === step)?.n ?? 0;
    for (const i of forward) {
      if (i % 2 === 0) {
        expect({ step: `book${i}`, n: count(ledger, `book${i}`) }).toEqual({ step: `book${i}`, n: 1 });
        expect({ step: `unbook${i}`, n: count(ledger, `unbook${i}`) }).toEqual({ step: `unbook${i}`, n: 1 }); // exactly once
      } else {
        expect({ step: `notify${i}`, n: count(executions, `notify${i}`) }).toEqual({ step: `notify${i}`, n: 1 });
        const n = count(executions, `unnotify${i}`); // at least once, at most once more per kill
        expect(n).toBeGreaterThanOrEqual(1);
        expect(n).toBeLessThanOrEqual(1 + kills);
      }
    }
    // Newest step first: by the first time each compensation did its work, and by the recorded steps.
    const firsts = [...ledger, ...executions]
      .filter((r) => r.step.startsWith('un'))
      .sort((a, b) => new Date(a.first).getTime() - new Date(b.first).getTime())
      .map((r) => Number(r.step.replace(/\D/g, '')));
    expect(firsts).toEqual([...forward].reverse());
    const steps = await q<{ seq: number; name: string; compensates: number | null }>(
      `SELECT seq, name, compensates FROM durable_steps WHERE run_id = $1 AND compensates IS NOT NULL ORDER BY seq`,
      [id],
    );
    expect(steps.map((s) => s.compensates)).toEqual([...forward].reverse());
    const history = await client.getRunEvents(id);
    expect(history.filter((e) => e.kind === 'lease_expired').length).toBeGreaterThanOrEqual(kills);
    return history.map((e) => e.kind);
  }

  it('a failing run: kills during its compensations; each runs as promised, newest first; the run ends FAILED with its own error', async () => {
    await Promise.all([spawn(), spawn()]);
    const handle = await client.startRun('failingSaga', { n: N, ms: MS }, { id: 'failing-saga' });
    await killDuringCompensation(handle.id, 2);
    await killDuringCompensation(handle.id, 5);
    const err = (await handle.result({ timeoutMs: 30_000 }).catch((x) => x)) as WorkflowFailedError;
    await Promise.all(spawning.splice(0));
    expect(err).toBeInstanceOf(WorkflowFailedError);
    expect(err.runError).toMatchObject({ message: 'the last step failed' });
    const kinds = await checkCompensations(handle.id, 2);
    expect(kinds.at(-1)).toBe('failed');
    expect(kinds).toContain('compensating');
  }, 90_000);

  it('a run cancelled with compensation while it waits: kills during its compensations; it ends CANCELLED, each undone as promised', async () => {
    const handle = await client.startRun('waitingSaga', { n: N, ms: MS }, { id: 'waiting-saga' });
    await eventually(
      async () => (await q(`SELECT 1 FROM durable_runs WHERE id = $1 AND status = 'WAITING'`, [handle.id])).length > 0,
      20_000,
      'the run to wait',
    );
    await client.cancel(handle.id, { compensate: true });
    await killDuringCompensation(handle.id, 2);
    await killDuringCompensation(handle.id, 5);
    await expect(handle.result({ timeoutMs: 30_000 })).rejects.toThrow(WorkflowCancelledError);
    await Promise.all(spawning.splice(0));
    const kinds = await checkCompensations(handle.id, 2);
    expect(kinds.at(-1)).toBe('cancelled');
    expect(kinds).toContain('cancel_requested');
  }, 90_000);
});
