import { Module } from '@nestjs/common';
import pg from 'pg';
import { InvalidArgumentError, InvalidOptionsError } from 'nestjs-durable';
import { createDurableTestingModule, replayRun } from 'nestjs-durable/testing';
import { WorkflowRegistry } from 'nestjs-durable/engine';
import { durationMs } from '../../libs/durable/src/testing/duration.js';
import { serverUrl } from '../support/global-setup.js';

/** The testing kit (nestjs-durable/testing) given bad input: typed errors that say what to pass. */
describe('bad input: the testing kit', () => {
  it('a duration that is not one: InvalidArgumentError with examples', () => {
    for (const bad of ['7 days', 'soon', '', -1, Number.NaN, '1x']) {
      expect(() => durationMs(bad as never, 'advanceTime()')).toThrow(InvalidArgumentError);
    }
    expect(() => durationMs('7 days', 'advanceTime()')).toThrow(/advanceTime\(\): "7 days" is not a duration: .*'7d', '60s'/);
    expect([durationMs('7d', 'x'), durationMs('1h30m', 'x'), durationMs('250ms', 'x'), durationMs(5, 'x')]).toEqual([
      7 * 86_400_000,
      5_400_000,
      250,
      5,
    ]);
  });

  it('a database option that is neither embedded nor a server URL, a migrations folder that is missing: InvalidOptionsError', async () => {
    await expect(createDurableTestingModule({}, { database: 'mysql://x' as never })).rejects.toThrow(InvalidOptionsError);
    await expect(createDurableTestingModule({}, { database: { url: 'localhost:5432' } })).rejects.toThrow(
      /database must be 'embedded', \{ url: 'postgresql:\/\/…' \} or \{ url: 'mysql:\/\/…' \} \(MariaDB\)/,
    );
    await expect(
      createDurableTestingModule({}, { database: { url: serverUrl() }, schema: { migrations: 'no/such/folder' } }),
    ).rejects.toThrow(/schema\.migrations ".*no\/such\/folder" does not exist/);
  });

  it('a module without DurableModule: InvalidOptionsError saying to import it (and the test database is dropped)', async () => {
    @Module({})
    class Empty {}
    const mine = async () => {
      const c = new pg.Client({ connectionString: `${serverUrl()}/postgres` });
      await c.connect();
      const { rows } = await c.query('SELECT count(*)::int AS n FROM pg_database WHERE starts_with(datname, $1)', [
        `durable_testing_${process.pid}_`,
      ]);
      await c.end();
      return rows[0].n as number;
    };
    const before = await mine();
    await expect(createDurableTestingModule({ imports: [Empty] }, { database: { url: serverUrl() } })).rejects.toThrow(
      /the module has no DurableModule; import DurableModule\.forRoot/,
    );
    expect(await mine()).toBe(before);
  });

  it('replayRun of something that is not an exported run: InvalidArgumentError naming the export routes', async () => {
    for (const bad of [{}, { format: 'other' }, '{"format":"nestjs-durable.run/1"}']) {
      await expect(replayRun(bad as never, new WorkflowRegistry())).rejects.toThrow(/not an exported run .*exportRun\(id\)/);
    }
  });
});
