// The testing kit on MariaDB: a test database per file made on a MariaDB server (database: { url:
// 'mysql://…' }), virtual time through the session's timestamp (sleeps of days, a deadline, a delayed
// start), step faults, and the same database untouched by the seam when it is not a kit database.
import { Inject, Injectable, Module, type OnApplicationShutdown } from '@nestjs/common';
import { PrismaMariaDb } from '@prisma/adapter-mariadb';
import { Durable, DurableModule, Step, Workflow, WorkflowFailedError } from 'nestjs-durable';
import { createDurableTestingModule, replayRun, type DurableTestingModule } from 'nestjs-durable/testing';
import { PrismaClient } from '../generated/mysql-prisma/client.js';
import { MARIADB_AVAILABLE, openDatabase, type KindDatabase } from '../support/databases.js';
import { MARIADB_SERVER } from '../support/mariadb.js';
import { FAST } from '../support/engine-harness.js';
import { DurableEngine, WorkflowRegistry } from 'nestjs-durable';

const DAY = 86_400_000;

@Injectable()
class PrismaService extends PrismaClient implements OnApplicationShutdown {
  constructor() {
    super({ adapter: new PrismaMariaDb(process.env.DATABASE_URL!.replace(/^mysql:/, 'mariadb:')) });
  }
  async onApplicationShutdown() {
    await this.$disconnect();
  }
}

@Injectable()
class Clocks {
  attempts = 0;
  @Step({ retries: { maxAttempts: 3, initialDelayMs: 10 } }) async stamp(label: string) {
    this.attempts++;
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
    return (await this.clocks.stamp('quick')).label;
  }
}

@Module({ imports: [DurableModule.forRoot({ prisma: PrismaService })], providers: [PrismaService, Clocks, Timed] })
class TimedModule {}

/** How far the database's NOW() is ahead of its real clock, in s, on the engine's own connections. */
const skewS = async (engine: DurableEngine) =>
  Number((await engine.storeForTools.sql.query<{ s: unknown }>('SELECT UNIX_TIMESTAMP(NOW(6)) - UNIX_TIMESTAMP(SYSDATE(6)) AS s'))[0].s);

(MARIADB_AVAILABLE ? describe : describe.skip)('the testing kit on MariaDB', () => {
  let t: DurableTestingModule;
  beforeAll(async () => {
    t = await createDurableTestingModule({ imports: [TimedModule] }, { database: { url: `${MARIADB_SERVER.replace(/\/$/, '')}/mysql` } });
  });
  afterAll(() => t?.close());

  it('makes a MariaDB test database and fires timers in virtual time: three one-day sleeps end within advanceTime("3d")', async () => {
    expect(t.db.url).toMatch(/^mysql:\/\/.*\/durable_testing_\d+_[0-9a-f]+$/);
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
    // the database's timestamps are in the same virtual frame
    const view = await t.run(run.id);
    expect(view.finishedAt!.getTime() - view.createdAt.getTime()).toBeGreaterThanOrEqual(3 * DAY);
    expect(Math.abs(view.finishedAt!.getTime() - t.now())).toBeLessThan(60_000);
    expect(await skewS(t.engine)).toBeGreaterThan(3 * 86_400 - 60);
  });

  it("passes a run's deadline, and starts a delayed run when its time comes", async () => {
    const slow = await t.start('tooSlow');
    await t.waitFor(slow.id, { status: 'WAITING' });
    await t.advanceTime('59m');
    expect((await t.run(slow.id)).status).toBe('WAITING');
    await t.advanceTime('1m');
    await expect(t.result(slow.id)).rejects.toThrow(WorkflowFailedError);
    const later = await t.start('quick', undefined, { delayMs: 2 * DAY });
    await t.advanceTime('1d');
    expect((await t.run(later.id)).status).toBe('PENDING');
    await t.advanceTime('1d');
    expect(await t.result(later.id)).toBe('quick');
  });

  it("exports a finished run from MariaDB and replays it against the module's code", async () => {
    const run = await t.start('quick');
    await t.result(run.id);
    const exported = await t.client.exportRun(run.id);
    expect(exported?.run).toMatchObject({ id: run.id, status: 'SUCCEEDED' });
    expect(await replayRun(exported!, t.moduleRef)).toMatchObject({ runId: run.id, outcome: 'returned', output: 'quick', replayed: 1 });
  });

  it('injects a step fault: the step fails once and its retry succeeds', async () => {
    const clocks = t.get<Clocks>(Clocks);
    const before = clocks.attempts;
    t.failStep('stamp');
    expect(await t.execute('quick')).toBe('quick');
    expect(clocks.attempts - before).toBe(1); // the injected failure ran no body; the retry did
    t.clearFaults();
  });
});

(MARIADB_AVAILABLE ? describe : describe.skip)('the virtual clock seam outside the testing kit', () => {
  let db: KindDatabase;
  let engine: DurableEngine;
  beforeAll(async () => {
    db = await openDatabase('mariadb', 'no_clock');
    engine = new DurableEngine({ registry: new WorkflowRegistry(), connection: db.url, options: { ...FAST, worker: false } });
    await engine.start();
  });
  afterAll(async () => {
    await engine.stop();
    await db.close();
  });

  it("leaves an app's database on real time: no clock table, no session timestamp set", async () => {
    expect(
      await db.query(
        "SELECT TABLE_NAME FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = 'durable_virtual_clock'",
      ),
    ).toEqual([]);
    expect(Math.abs(await skewS(engine))).toBeLessThan(1);
  });
});
