// Virtual time of nestjs-durable/testing beyond the example of docs/testing.md: timers fire in time order (each
// sleep starts from the virtual time the previous one ended), Durable.now() and the database's
// timestamps follow, deadlines and delayed starts come due, and real time keeps working.
import { Inject, Injectable, Module, type OnApplicationShutdown } from '@nestjs/common';
import { PrismaPg } from '@prisma/adapter-pg';
import { Durable, DurableModule, Step, Workflow, WorkflowFailedError } from 'nestjs-durable';
import { createDurableTestingModule, type DurableTestingModule } from 'nestjs-durable/testing';
import { PrismaClient } from '../../src/generated/prisma/client.js';
import { engineStatements } from '../../libs/durable/src/store/statement.js';
import { serverUrl } from '../support/global-setup.js';

const DAY = 86_400_000;

@Injectable()
class PrismaService extends PrismaClient implements OnApplicationShutdown {
  constructor() {
    super({ adapter: new PrismaPg({ connectionString: process.env.DATABASE_URL! }) });
  }
  async onApplicationShutdown() {
    await this.$disconnect();
  }
}

@Injectable()
class Clocks {
  @Step() async stamp(label: string) {
    return { label, at: await Durable.now() };
  }
}

@Injectable()
class Timed {
  constructor(@Inject(Clocks) private readonly clocks: Clocks) {}

  @Workflow({ name: 'threeNights' })
  async threeNights() {
    const times = [await Durable.now()];
    for (let i = 0; i < 3; i++) {
      await Durable.sleep(DAY);
      times.push(await Durable.now());
    }
    return { times, step: await this.clocks.stamp('end') };
  }

  @Workflow({ name: 'tooSlow', timeoutMs: 3_600_000 })
  async tooSlow() {
    await Durable.sleep(2 * 3_600_000);
    return 'finished';
  }

  @Workflow({ name: 'quick' })
  async quick() {
    await Durable.sleep(50);
    return 'slept 50 ms of real time';
  }
}

@Module({ imports: [DurableModule.forRoot({ prisma: PrismaService })], providers: [PrismaService, Clocks, Timed] })
class TimedModule {}

describe('virtual time (nestjs-durable/testing)', () => {
  let t: DurableTestingModule;
  beforeAll(async () => {
    t = await createDurableTestingModule({ imports: [TimedModule] }, { database: { url: serverUrl() } });
  });
  afterAll(() => t?.close());

  it('fires timers in time order: three one-day sleeps in a row all end within advanceTime("3d"); Durable.now() follows', async () => {
    const startedAt = t.now();
    const run = await t.start('threeNights');
    await t.waitFor(run.id, { status: 'WAITING' });
    await t.advanceTime('3d');
    const out = await t.result<{ times: number[]; step: { at: number } }>(run.id);
    const gaps = out.times.slice(1).map((x, i) => x - out.times[i]);
    for (const gap of gaps) {
      expect(gap).toBeGreaterThanOrEqual(DAY);
      expect(gap).toBeLessThan(DAY + 60_000);
    }
    expect(out.times[0] - startedAt).toBeLessThan(60_000);
    expect(out.step.at).toBeGreaterThanOrEqual(out.times[3]); // inside a step too
    const view = await t.run(run.id);
    // The database's own timestamps (statements' now(), column defaults) are in the same virtual frame.
    expect(view.finishedAt!.getTime() - view.createdAt.getTime()).toBeGreaterThanOrEqual(3 * DAY);
    expect(Math.abs(view.finishedAt!.getTime() - t.now())).toBeLessThan(60_000);
  });

  it("passes a run's deadline: the sweeper fails it when virtual time reaches it", async () => {
    const run = await t.start('tooSlow');
    await t.waitFor(run.id, { status: 'WAITING' });
    await t.advanceTime('59m');
    expect((await t.run(run.id)).status).toBe('WAITING');
    await t.advanceTime('1m');
    await expect(t.result(run.id)).rejects.toThrow(WorkflowFailedError);
    expect((await t.run(run.id)).status).toBe('FAILED');
  });

  it('starts a delayed run when its start time comes', async () => {
    const run = await t.start('quick', undefined, { delayMs: 2 * DAY });
    await t.advanceTime('1d');
    expect((await t.run(run.id)).status).toBe('PENDING');
    await t.advanceTime('1d');
    expect(await t.result(run.id)).toBe('slept 50 ms of real time');
  });

  it("moves the clock without JIT compiling it: a test database's statements take milliseconds, not a compiler's hundreds", async () => {
    // The clock's one-row table is analyzed in the template (before, the planner guessed 2,200 rows
    // and priced the move over jit_above_cost: 100-500 ms per connection), and JIT is off.
    const q = async (sql: string) => (await t.engine.storeForTools.sql.query<Record<string, unknown>>(sql))[0];
    expect(await q(`SELECT current_setting('jit') AS jit, current_setting('synchronous_commit') AS sync`)).toEqual({
      jit: 'off',
      sync: 'off',
    });
    expect(await q(`SELECT reltuples FROM pg_class WHERE oid = 'durable_virtual_clock.state'::regclass`)).toEqual({ reltuples: 1 });
    const move = engineStatements().get('durable_testing_move_clock')!.replace('$1::float8', '0::float8');
    const plan = await q(`EXPLAIN (FORMAT JSON) ${move}`);
    const cost = (plan['QUERY PLAN'] as [{ Plan: { 'Total Cost': number } }])[0].Plan['Total Cost'];
    expect(cost).toBeLessThan(100_000); // jit_above_cost's default
  });

  it('keeps real time: a short sleep ends by itself, no advanceTime needed', async () => {
    expect(await t.execute('quick')).toBe('slept 50 ms of real time');
  });
});
