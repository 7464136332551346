import { EngineHarness } from '../support/engine-harness.js';

/**
 * Two app versions running at once (a rolling deploy): instances of the old and the new build boot
 * in turn, each syncing the schedules declared in its code. The newer declaration must win, whatever
 * the order of the boots, instead of the cron flipping with every restart.
 */
describe('declared schedules during a rolling deploy', () => {
  let h: EngineHarness;
  beforeAll(async () => {
    h = await EngineHarness.create('rolling_deploy');
  });
  afterAll(() => h?.close());

  const report = async () => null;
  const logs: string[] = [];
  const logger = { log: (m: string) => logs.push(m), warn: (m: string) => logs.push(m), error: () => {}, debug: () => {} };
  /** One instance of a build: boots (syncing its schedules), then stops. */
  async function boot(appVersion: string, cron: string | null) {
    const options = cron ? { schedule: { cron } } : {};
    const engine = await h.engine({ report: [report, options] }, { appVersion, logger, logLevel: 'log' });
    await engine.stop();
  }
  const row = async () =>
    (
      await h.query<{ cron: string; declared_versions: string[] }>(
        `SELECT cron, declared_versions FROM durable_schedules WHERE id = 'report'`,
      )
    )[0];

  it('the new version takes the schedule over; old instances booting after it leave it alone', async () => {
    await boot('v1', '0 6 * * *');
    expect(await row()).toEqual({ cron: '0 6 * * *', declared_versions: ['v1'] });
    await boot('v2', '0 7 * * *');
    expect(await row()).toEqual({ cron: '0 7 * * *', declared_versions: ['v1', 'v2'] });
    logs.length = 0;
    await boot('v1', '0 6 * * *'); // an old instance restarts mid-deploy
    expect(await row()).toEqual({ cron: '0 7 * * *', declared_versions: ['v1', 'v2'] });
    expect(logs.join('\n')).toMatch(/declared schedule "report" left as it is: app version v2 declared it after this process's version v1/);
    await boot('v2', '0 7 * * *');
    await boot('v1', '0 6 * * *');
    expect((await row()).cron).toBe('0 7 * * *');
  });

  it('an old instance does not delete the schedule a newer version declares', async () => {
    await boot('v3', '0 8 * * *'); // v3 takes it over from v2 and changes it
    await boot('v2', null); // an instance of v2 whose code no longer declares it (v2 is older than v3)
    expect(await row()).toEqual({ cron: '0 8 * * *', declared_versions: ['v1', 'v2', 'v3'] });
  });

  it('the version that stops declaring a schedule removes it, with a warning', async () => {
    await boot('v4', null);
    expect(await row()).toBeUndefined();
    expect(logs.join('\n')).toMatch(/declared schedule "report" \(cron "0 8 \* \* \*"\) deleted for the whole cluster/);
  });

  it('without appVersion the last instance to boot decides, as before', async () => {
    await h.engine({ report: [report, { schedule: { cron: '0 9 * * *' } }] }, { logger }).then((e) => e.stop());
    expect((await row()).cron).toBe('0 9 * * *');
  });
});
