import { Injectable } from '@nestjs/common';
import { Durable, Workflow, WorkflowClient } from 'nestjs-durable';
import request from 'supertest';
import { eventually } from '../support/engine-harness.js';
import { createAdminApp, sleep, type AdminApp } from './support/admin-app.js';

interface StepJson {
  seq: number;
  name: string;
  status: string;
  startedAt: string | null;
  finishedAt: string | null;
  durationMs: number | null;
  derived?: boolean;
  wait?: { kind: string; topic?: string; runId?: string; until: string | null };
}

/** A parent that waits for its child (admin.waiter, which waits for a message): this suite's own workflow. */
@Injectable()
class ParentWorkflows {
  @Workflow({ name: 'waits.parent', queue: 'admin-q' })
  async parent() {
    const child = await Durable.startChild('admin.waiter', { sleepMs: 10, timeoutMs: 10 });
    return child.result();
  }
}

/**
 * What a run's detail shows of its durable waits while they last and after they end (derived in
 * the admin read path from the steps and the history the engine records), and the tags of child runs.
 */
describe('admin run detail: waits as steps, child tags (real Nest app, worker, Postgres)', () => {
  let a: AdminApp;
  let client: WorkflowClient;
  const detail = async (id: string) => (await request(a.server).get(`/durable/runs/${id}`).expect(200)).body;
  const step = async (id: string, seq: number): Promise<StepJson | undefined> =>
    (await detail(id)).steps.find((s: StepJson) => s.seq === seq);

  beforeAll(async () => {
    // A sleep longer than inMemoryWaitMaxMs suspends the run; a message wait suspends after suspendGraceMs.
    a = await createAdminApp('admin_waits', { engine: { leaseMs: 15_000, heartbeatMs: 1_000 }, providers: [ParentWorkflows] });
    client = a.app.get(WorkflowClient);
  });
  afterAll(() => a.close());

  it('shows a sleep as WAITING until its wake time, then its real length; a recv without timeout as a row while it waits', async () => {
    const { id } = await client.start('admin.waiter', { sleepMs: 6_000, timeoutMs: 60_000 });
    // seq 0: the step; seq 1: the sleep.
    await eventually(async () => (await step(id, 1))?.status === 'WAITING', 10_000, 'the sleep to show as waiting');
    const sleeping = (await step(id, 1))!;
    expect(sleeping).toMatchObject({ name: 'durable.sleep', finishedAt: null, durationMs: null, wait: { kind: 'sleep' } });
    expect(Date.parse(sleeping.wait!.until!) - Date.parse(sleeping.startedAt!)).toBeGreaterThanOrEqual(5_999);
    await eventually(async () => (await detail(id)).status === 'WAITING', 10_000, 'the run to suspend for its sleep');

    // Woken: the sleep ends at its wake time. Then the run waits for "go" (no timeout): a row from its suspension.
    await eventually(async () => (await step(id, 2))?.derived === true, 30_000, 'the recv without timeout to appear');
    const slept = (await step(id, 1))!;
    expect(slept).toMatchObject({ status: 'SUCCEEDED', finishedAt: sleeping.wait!.until });
    expect(Math.abs(slept.durationMs! - 6_000)).toBeLessThanOrEqual(2);
    const waiting = (await step(id, 2))!;
    expect(waiting).toMatchObject({
      name: 'durable.recv:go',
      status: 'WAITING',
      finishedAt: null,
      durationMs: null,
      wait: { kind: 'recv', topic: 'go', until: null },
    });
    expect(Date.parse(waiting.startedAt!)).toBeGreaterThanOrEqual(Date.parse(slept.finishedAt!));
    // The list says what a WAITING run waits for (its latest suspension).
    const listed = (await request(a.server).get(`/durable/runs?idPrefix=${id}`).expect(200)).body.items[0];
    expect(listed).toMatchObject({ status: 'WAITING', waits: [{ seq: 2, kind: 'recv', key: 'go' }] });

    await sleep(1_000);
    await client.send(id, 'go', { ok: true });
    // Received: the recorded step starts when the run went to sleep for it, not when the message came.
    await eventually(async () => (await step(id, 3))?.status === 'WAITING', 15_000, 'the recv with a timeout to wait');
    const got = (await step(id, 2))!;
    expect(got).toMatchObject({ status: 'SUCCEEDED', startedAt: waiting.startedAt });
    expect(got.derived).toBeUndefined();
    expect(got.durationMs!).toBeGreaterThanOrEqual(900);
    const timed = (await step(id, 3))!;
    expect(timed).toMatchObject({ name: 'durable.recv:late', finishedAt: null, durationMs: null, wait: { kind: 'recv', topic: 'late' } });
    expect(Date.parse(timed.wait!.until!) - Date.parse(timed.startedAt!)).toBeGreaterThanOrEqual(59_999);

    // Cancelled while waiting: the wait ends with the run.
    await client.cancel(id);
    const ended = await detail(id);
    const last = ended.steps.find((s: StepJson) => s.seq === 3);
    expect(last).toMatchObject({ status: 'CANCELLED', finishedAt: ended.finishedAt });
    expect(ended.steps.map((s: StepJson) => s.status)).toEqual(['SUCCEEDED', 'SUCCEEDED', 'SUCCEEDED', 'CANCELLED']);
  }, 90_000);

  it('shows a parent waiting for its child: the list and the detail name the child run', async () => {
    const parent = await client.start('waits.parent', {});
    const childId = `${parent.id}:child:0`;
    await eventually(async () => (await detail(parent.id)).status === 'WAITING', 20_000, 'the parent to suspend for its child');
    // (the prefix finds the child too: its id starts with the parent's)
    const items = (await request(a.server).get(`/durable/runs?idPrefix=${parent.id}`).expect(200)).body.items as Array<{ id: string }>;
    const listed = items.find((r) => r.id === parent.id);
    expect(listed).toMatchObject({ id: parent.id, status: 'WAITING', waits: [{ kind: 'child', key: childId }] });
    await eventually(async () => (await step(parent.id, 1))?.status === 'WAITING', 10_000, "the child's result to show as a wait");
    expect(await step(parent.id, 1)).toMatchObject({ status: 'WAITING', finishedAt: null, wait: { kind: 'child', runId: childId } });
    // The child waits for its message; once it has it, both end and the wait is a finished step.
    await eventually(async () => (await detail(childId)).status === 'WAITING', 20_000, 'the child to wait for "go"');
    await client.send(childId, 'go', 1);
    await expect(parent.result({ timeoutMs: 30_000 })).resolves.toEqual({ go: 1, late: null });
    expect(await step(parent.id, 1)).toMatchObject({ status: 'SUCCEEDED', wait: { kind: 'child', runId: childId } });
  }, 90_000);

  it("gives a child its parent's tags unless it is started with its own (tags: [] for none)", async () => {
    const parent = await client.start('admin.family', {}, { tags: ['tree:7', 'customer:acme'] });
    const kids = (await parent.result({ timeoutMs: 30_000 })) as string[];
    const { rows } = await a.pool.query<{ id: string; tags: string[] }>(`SELECT id, tags FROM durable_runs WHERE id = ANY($1)`, [kids]);
    const tags = Object.fromEntries(rows.map((r) => [r.id, r.tags]));
    expect(kids.map((k) => tags[k])).toEqual([['tree:7', 'customer:acme'], ['child:own'], []]);
    // A search by the parent's tag finds the tree.
    const found = (await request(a.server).get('/durable/runs?tag=tree:7').expect(200)).body.items.map((r: { id: string }) => r.id);
    expect(found.sort()).toEqual([parent.id, kids[0]].sort());
  });
});
