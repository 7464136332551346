import { Injectable, Module } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import {
  DurableCron,
  DurableModule,
  InvalidArgumentError,
  InvalidOptionsError,
  InvalidScheduleError,
  ScheduleNotFoundError,
  UnknownWorkflowError,
  Workflow,
  WorkflowRegistry,
  type DurableEngine,
  type WorkflowOptions,
} from 'nestjs-durable';
import { EngineHarness } from '../support/engine-harness.js';

/**
 * Bad schedules: a cron expression or time zone the cron library rejects, an expression that
 * never fires, policy values out of range — a typed error naming the workflow (or schedule) and
 * the value, at boot for a declared schedule; bad arguments of the runtime API, with nothing written.
 */
/** Never queried: the app fails before the engine touches the database. */
const fakePrisma = { $transaction: async () => null, $queryRawUnsafe: async () => [] } as never;
const register = (schedule: unknown) => {
  const r = new WorkflowRegistry();
  r.register({
    name: 'nightly',
    queue: 'default',
    options: { schedule } as WorkflowOptions,
    run: async () => null,
    className: 'Jobs',
    methodName: 'nightly',
  });
};
const failure = (fn: () => unknown): InvalidScheduleError => {
  try {
    fn();
  } catch (err) {
    return err as InvalidScheduleError;
  }
  throw new Error('expected an error');
};

describe('bad input: declared schedules', () => {
  it.each([
    [{ cron: '61 * * * *' }, 'cron', '"61 * * * *"', /out of range/],
    [{ cron: '* * *' }, 'cron', '"* * *"', /Too few fields/],
    [{ cron: '* * * * * * *' }, 'cron', '"* * * * * * *"', /Too many fields/],
    [{ cron: 'every day' }, 'cron', '"every day"', /not a valid cron expression/],
    [{ cron: '0 0 31 2 *' }, 'cron', '"0 0 31 2 *"', /never fires/],
    [{ cron: '' }, 'cron', '""', /must be a cron expression/],
    [{ cron: 42 }, 'cron', '42', /must be a cron expression/],
    [{}, 'cron', 'undefined', /must be a cron expression/],
    [{ cron: '0 3 * * *', timeZone: 'Mars/Olympus_Mons' }, 'timeZone', '"Mars/Olympus_Mons"', /not a time zone/],
    [{ cron: '0 3 * * *', timeZone: '' }, 'timeZone', '""', /IANA time zone/],
    [{ cron: '0 3 * * *', catchUp: 'some' }, 'catchUp', '"some"', /skip, latest, all/],
    [{ cron: '0 3 * * *', overlap: 'queue' }, 'overlap', '"queue"', /skip, allow, bufferOne/],
    [{ cron: '0 3 * * *', jitterMs: -1 }, 'jitterMs', '-1', /between 0 and/],
    [{ cron: '0 3 * * *', jitterMs: 1.5 }, 'jitterMs', '1.5', /whole number/],
    [{ cron: '0 3 * * *', catchUpWindowMs: 0 }, 'catchUpWindowMs', '0', /between 1 and/],
    [{ cron: '0 3 * * *', timezone: 'UTC' }, 'option', '"timezone"', /is unknown; a schedule has cron, timeZone/],
  ])('%j → InvalidScheduleError naming the workflow, %s and the value', (schedule, field, value, problem) => {
    const err = failure(() => register(schedule));
    expect(err).toBeInstanceOf(InvalidScheduleError);
    expect(err.code).toBe('INVALID_SCHEDULE');
    expect(err.field).toBe(field);
    expect(err.value).toBe(value);
    expect(err.message).toContain('workflow "nightly" (Jobs.nightly())');
    expect(err.message).toContain(value);
    expect(err.message).toMatch(problem);
  });

  it('a schedule that is not an object', () => {
    expect(failure(() => register('0 3 * * *'))).toBeInstanceOf(InvalidScheduleError);
    expect(failure(() => register(null)).message).toContain('workflow "nightly"');
  });

  it('@DurableCron with a bad expression: the Nest app fails at boot with the typed error', async () => {
    @Injectable()
    class Jobs {
      @DurableCron('0 61 * * *', { timeZone: 'Europe/Paris' })
      async cancelUnpaid() {}
    }
    @Module({
      imports: [
        DurableModule.forRoot({
          prisma: fakePrisma,
          connection: false,
          logging: false,
        }),
      ],
      providers: [Jobs],
    })
    class AppModule {}
    const ref = await Test.createTestingModule({ imports: [AppModule] }).compile();
    const app = ref.createNestApplication({ logger: false });
    const err = await app.init().then(
      () => null,
      (e: unknown) => e,
    );
    await app.close().catch(() => {});
    expect(err).toBeInstanceOf(InvalidScheduleError);
    expect((err as Error).message).toBe(
      'Invalid schedule of workflow "cancelUnpaid" (Jobs.cancelUnpaid()): cron "0 61 * * *" is not a valid cron expression (Field value (61) is out of range).',
    );
  });

  it('@Workflow({ schedule }) with a bad time zone: the same at boot', async () => {
    @Injectable()
    class Jobs {
      @Workflow({ name: 'report', schedule: { cron: '0 6 * * *', timeZone: 'Europe/Atlantis' } })
      async report() {}
    }
    @Module({
      imports: [
        DurableModule.forRoot({
          prisma: fakePrisma,
          connection: false,
          logging: false,
        }),
      ],
      providers: [Jobs],
    })
    class AppModule {}
    const app = (await Test.createTestingModule({ imports: [AppModule] }).compile()).createNestApplication({ logger: false });
    const err = await app.init().then(
      () => null,
      (e: unknown) => e,
    );
    await app.close().catch(() => {});
    expect(err).toBeInstanceOf(InvalidScheduleError);
    expect((err as Error).message).toContain('workflow "report" (Jobs.report()): timeZone "Europe/Atlantis" is not a time zone');
  });
});

describe('bad input: the runtime schedules API', () => {
  let h: EngineHarness;
  let engine: DurableEngine;
  const count = async () => (await h.query<{ n: number }>('SELECT count(*)::int AS n FROM durable_schedules'))[0].n;

  beforeAll(async () => {
    h = await EngineHarness.create('sched_bad');
    engine = await h.engine({ job: async () => null });
  });
  afterAll(async () => {
    await h.close();
  });

  it.each([
    [{ id: 't', workflow: 'job', cron: '*/0 * * * *' }, InvalidScheduleError, /schedule "t": cron "\*\/0 \* \* \* \*"/],
    [{ id: 't', workflow: 'job', cron: '0 * * * *', timeZone: 'Nowhere/City' }, InvalidScheduleError, /timeZone "Nowhere\/City"/],
    [{ id: 't', workflow: 'job', cron: '0 * * * *', overlap: 'ALLOW' }, InvalidScheduleError, /overlap "ALLOW" must be one of/],
    [{ id: 't', workflow: 'job', cron: '0 * * * *', catchUp: 7 }, InvalidScheduleError, /catchUp 7 must be one of/],
    [{ id: 't', workflow: 'job', cron: '0 * * * *', everySecond: true }, InvalidScheduleError, /option "everySecond" is unknown/],
    [{ id: '', workflow: 'job', cron: '0 * * * *' }, InvalidArgumentError, /schedule id must be a non-empty string/],
    [{ id: 'x'.repeat(201), workflow: 'job', cron: '0 * * * *' }, InvalidArgumentError, /at most 200 characters/],
    [{ id: 't', workflow: 'nope', cron: '0 * * * *' }, UnknownWorkflowError, /No workflow named "nope"/],
    [{ id: 't', workflow: 42, cron: '0 * * * *' }, InvalidArgumentError, /workflow must be the name/],
    [{ id: 't', workflow: 'job', cron: '0 * * * *', paused: 'yes' }, InvalidArgumentError, /paused must be true or false/],
    [{ id: 't', workflow: 'job', cron: '0 * * * *', input: { f: () => 1 } }, Error, /function is not data/],
    [null, InvalidArgumentError, /expects an object/],
  ])('create(%j) → typed error, nothing written', async (def, type, message) => {
    const err = await engine.schedules.create(def as never).then(
      () => null,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(type);
    expect((err as Error).message).toMatch(message);
    expect(await count()).toBe(0);
  });

  it('update, pause, resume, trigger, runs and list with bad arguments', async () => {
    await engine.schedules.create({ id: 'ok', workflow: 'job', cron: '0 0 1 1 *' });
    await expect(engine.schedules.update('ok', { cron: 'nope' })).rejects.toBeInstanceOf(InvalidScheduleError);
    await expect(engine.schedules.update('ok', { jitterMs: 1e12 })).rejects.toBeInstanceOf(InvalidScheduleError);
    await expect(engine.schedules.update('ok', { paused: true } as never)).rejects.toBeInstanceOf(InvalidArgumentError);
    await expect(engine.schedules.update('missing', { cron: '0 * * * *' })).rejects.toBeInstanceOf(ScheduleNotFoundError);
    for (const op of ['pause', 'resume', 'trigger'] as const) {
      await expect(engine.schedules[op]('missing')).rejects.toBeInstanceOf(ScheduleNotFoundError);
      await expect(engine.schedules[op](42 as never)).rejects.toBeInstanceOf(InvalidArgumentError);
    }
    await expect(engine.schedules.runs('ok', { limit: 0 })).rejects.toBeInstanceOf(InvalidArgumentError);
    await expect(engine.schedules.list({ limit: 501 })).rejects.toBeInstanceOf(InvalidArgumentError);
    await expect(engine.schedules.list({ paused: 'no' as never })).rejects.toBeInstanceOf(InvalidArgumentError);
    await expect(engine.schedules.get('x'.repeat(300))).rejects.toBeInstanceOf(InvalidArgumentError);
    const row = (await engine.schedules.get('ok'))!;
    expect(row).toMatchObject({ cron: '0 0 1 1 *', jitterMs: 0, paused: false }); // unchanged by the refused updates
  });

  it('engine options of the scheduler are checked with the others', async () => {
    const bad = [{ schedules: 'yes' }, { scheduleBatchSize: 0 }, { scheduleMisfireMs: -1 }];
    for (const options of bad) {
      await expect(h.engine({}, options as never, false)).rejects.toBeInstanceOf(InvalidOptionsError);
    }
  });
});
