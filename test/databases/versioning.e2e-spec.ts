import { Durable, DurableEngine, WorkflowRegistry, type EngineOptions } from 'nestjs-durable';
import { eventually, sleep, STEADY } from '../support/engine-harness.js';
import { DATABASES, openDatabase, type KindDatabase } from '../support/databases.js';

type Fn = (input: any) => Promise<unknown>;

/**
 * Safe deploys on every database the engine supports: version-aware claiming (runVersions 'own':
 * a build claims the runs its version started and runs without a version, never another build's),
 * and patched() across a code change (a run that passed the point before the patch keeps the old
 * path, a run reaching it with the new code takes the new one).
 */
describe.each(DATABASES)('versioning on %s', (kind) => {
  let db: KindDatabase;
  const engines: DurableEngine[] = [];
  const ran = new Map<string, string>();

  async function engine(workflows: Record<string, Fn>, options: EngineOptions): Promise<DurableEngine> {
    const registry = new WorkflowRegistry();
    for (const [name, run] of Object.entries(workflows)) registry.register({ name, queue: 'default', options: {}, run });
    const e = new DurableEngine({ registry, connection: db.url, prisma: db.prisma, options: { ...STEADY, ...options } });
    engines.push(e);
    await e.start();
    return e;
  }
  const statuses = async (ids: string[]) =>
    (
      await db.query<{ id: string; status: string }>(
        `SELECT id, status FROM durable_runs WHERE id IN (${ids.map(() => '?').join(', ')}) ORDER BY id`,
        ids,
      )
    ).map((r) => r.status);

  beforeAll(async () => {
    db = await openDatabase(kind, `versioning_${kind}`);
  });
  afterAll(async () => {
    for (const e of engines.splice(0)) await e.stop();
    await db.close();
  });

  it("runVersions 'own': build 2 claims its runs and unversioned ones, never build 1's, until build 1 drains them", async () => {
    const build = (label: string) => ({ job: async (input: { id: string }) => (ran.set(input.id, label), label) });
    const v1 = await engine(build('client'), { worker: false, appVersion: '1' });
    const v2 = await engine(build('client'), { worker: false, appVersion: '2' });
    const none = await engine(build('client'), { worker: false });
    await engine(build('build-2'), { appVersion: '2', runVersions: 'own', workerId: 'build-2' });
    for (const [c, ids] of [
      [v1, ['v1-a', 'v1-b']],
      [v2, ['v2-a', 'v2-b']],
      [none, ['none-a']],
    ] as const) {
      for (const id of ids) await c.startRun('job', { id }, { id });
    }
    await eventually(async () => (await statuses(['v2-a', 'v2-b', 'none-a'])).every((s) => s === 'SUCCEEDED'), 15_000, 'build 2 runs');
    await sleep(300);
    expect(await statuses(['v1-a', 'v1-b'])).toEqual(['PENDING', 'PENDING']);
    expect(['v2-a', 'v2-b', 'none-a'].map((id) => ran.get(id))).toEqual(['build-2', 'build-2', 'build-2']);
    await engine(build('build-1'), { appVersion: '1', runVersions: 'own', workerId: 'build-1' });
    await eventually(async () => (await statuses(['v1-a', 'v1-b'])).every((s) => s === 'SUCCEEDED'), 15_000, 'build 1 runs');
    expect(['v1-a', 'v1-b'].map((id) => ran.get(id))).toEqual(['build-1', 'build-1']);
  });

  it('patched(): a run that recorded steps past the point before the patch keeps the old path; a new run takes the new one', async () => {
    const paths = new Map<string, string[]>();
    const note = (id: string, what: string) => paths.set(id, [...(paths.get(id) ?? []), what]);
    const old = await engine(
      {
        order: async (input: { id: string }) => {
          await Durable.step('a', async () => note(input.id, 'a'));
          await Durable.step('b', async () => note(input.id, 'b'));
          await Durable.recv<string>('go');
          await Durable.step('c', async () => note(input.id, 'c'));
        },
      },
      { workerId: 'old-code' },
    );
    const before = await old.startRun('order', { id: 'before' }, { id: 'before' });
    await eventually(async () => (await statuses(['before']))[0] === 'WAITING', 10_000, 'the old run to wait');
    await old.stop();
    const patched = await engine(
      {
        order: async (input: { id: string }) => {
          await Durable.step('a', async () => note(input.id, 'a'));
          if (await Durable.patched('fraud-check')) await Durable.step('fraud', async () => note(input.id, 'fraud'));
          await Durable.step('b', async () => note(input.id, 'b'));
          await Durable.recv<string>('go');
          await Durable.step('c', async () => note(input.id, 'c'));
        },
      },
      { workerId: 'new-code' },
    );
    const after = await patched.startRun('order', { id: 'after' }, { id: 'after' });
    await eventually(async () => (await statuses(['after']))[0] === 'WAITING', 10_000, 'the new run to wait');
    await patched.send(before.id, 'go', 'now');
    await patched.send(after.id, 'go', 'now');
    await eventually(async () => (await statuses(['after', 'before'])).every((x) => x === 'SUCCEEDED'), 10_000, 'both runs to finish');
    expect(paths.get('before')).toEqual(['a', 'b', 'c']);
    expect(paths.get('after')).toEqual(['a', 'fraud', 'b', 'c']);
  });

  it("verify replays the runs in flight inside a read-only transaction: a step inserted before a waiting run's position is reported, nothing written", async () => {
    const shipping = (steps: string[]) => async () => {
      for (const name of steps.slice(0, -1)) await Durable.step(name, async () => name);
      await Durable.recv<string>('go');
      await Durable.step(steps[steps.length - 1], async () => 'done');
    };
    const old = await engine({ shipping: shipping(['pack', 'label', 'ship']) }, { workerId: 'shipping-v1' });
    await old.startRun('shipping', {}, { id: 'ship-1' });
    await eventually(async () => (await statuses(['ship-1']))[0] === 'WAITING', 10_000, 'the run to wait');
    await old.stop();
    const rows = async () => Number((await db.query<{ n: unknown }>('SELECT count(*) AS n FROM durable_run_events'))[0].n);
    const events = await rows();
    const verifier = (steps: string[]) => {
      const registry = new WorkflowRegistry();
      registry.register({ name: 'shipping', queue: 'default', options: {}, run: shipping(steps) });
      const e = new DurableEngine({ registry, connection: db.url, prisma: db.prisma, options: { worker: false } });
      engines.push(e);
      return e;
    };
    const same = await verifier(['pack', 'label', 'ship']).verify({ workflows: ['shipping'] });
    expect(same).toMatchObject({ ok: true, checked: 1, failed: 0 });
    const changed = await verifier(['pack', 'weigh', 'label', 'ship']).verify({ workflows: ['shipping'] });
    expect(changed).toMatchObject({ ok: false, checked: 1, failed: 1 });
    expect(changed.workflows[0].failures[0]).toMatchObject({
      runId: 'ship-1',
      status: 'WAITING',
      seq: 1,
      recorded: 'label',
      actual: 'weigh',
    });
    expect(await rows()).toBe(events);
  });
});
