import { DurableEngine, DurableModule, InvalidOptionsError, WorkflowRegistry, type DurableLogger } from 'nestjs-durable';
import { EngineHarness } from '../support/engine-harness.js';

/**
 * Unknown or misplaced options are errors at construction, naming the key and where it belongs
 * (engine and module alike), and a process that does not run the scheduler never changes the
 * declared schedules; one that does deletes a declared schedule only for a workflow it registers
 * without one, and says so in a warning.
 */
describe('bad input: unknown and misplaced options', () => {
  let h: EngineHarness;
  beforeAll(async () => {
    h = await EngineHarness.create('unknown_options');
  });
  afterAll(() => h.close());

  const engineError = (config: object) => {
    try {
      new DurableEngine({ registry: new WorkflowRegistry(), connection: h.db.url, ...config } as never);
    } catch (err) {
      return err as Error;
    }
    throw new Error('no error');
  };

  it('new DurableEngine(): a misplaced key names where it belongs, a typo the nearest option', () => {
    const misplaced = engineError({ worker: false, schedules: false });
    expect(misplaced).toBeInstanceOf(InvalidOptionsError);
    expect(misplaced.message).toContain('unknown option `worker` at the top level; did you mean `options.worker`?');
    expect(misplaced.message).toContain('unknown option `schedules` at the top level; did you mean `options.schedules`?');
    expect(engineError({ options: { wroker: false } }).message).toContain(
      'unknown option `options.wroker` in options; did you mean `options.worker`?',
    );
    expect(engineError({ options: { connection: 'x' } }).message).toContain('did you mean `connection`?');
    expect(engineError({ options: { zzzzzzzz: 1 } }).message).toMatch(
      /unknown option `options.zzzzzzzz` in options \(known: workerId, worker,/,
    );
    expect(engineError({ conection: 'x' }).message).toContain('did you mean `connection`?');
  });

  it('DurableModule.forRoot(): engine options sit at the top level; typos get the nearest option', () => {
    const err = (o: object) => {
      try {
        DurableModule.forRoot({ prisma: 'PRISMA', ...o } as never);
      } catch (e) {
        return e as Error;
      }
      throw new Error('no error');
    };
    expect(err({ options: { worker: false } })).toBeInstanceOf(InvalidOptionsError);
    expect(err({ options: { worker: false } }).message).toContain(
      'unknown option `options`: DurableModule takes the engine options at the top level',
    );
    expect(err({ wroker: false }).message).toContain('unknown option `wroker` in DurableModule options; did you mean `worker`?');
    expect(err({ logger: console }).message).toContain('logging: false');
    expect(() => DurableModule.forRoot({ prisma: 'PRISMA', worker: false, isGlobal: true, admin: false } as never)).not.toThrow();
  });

  it('schedules: a process with options.schedules = false never changes them; a scheduler deletes an undeclared one with a warning', async () => {
    const nightly = { schedule: { cron: '0 3 * * *' } };
    await h.engine({ nightly: [async () => 'ok', nightly] });
    const rows = () => h.query(`SELECT id, cron FROM durable_schedules WHERE id = 'nightly'`);
    expect(await rows()).toEqual([{ id: 'nightly', cron: '0 3 * * *' }]);

    // A one-off script: same workflow name, no cron, no scheduler.
    await h.engine({ nightly: async () => 'stub' }, { worker: false, schedules: false });
    expect(await rows()).toEqual([{ id: 'nightly', cron: '0 3 * * *' }]);

    const warnings: string[] = [];
    const logger: DurableLogger = { log() {}, warn: (m) => warnings.push(m), error() {} };
    await h.engine({ nightly: async () => 'no schedule any more' }, { worker: false, schedules: true, logger });
    expect(await rows()).toEqual([]);
    expect(warnings.join('\n')).toMatch(/declared schedule "nightly" \(cron "0 3 \* \* \*"\) deleted for the whole cluster/);
  });
});
