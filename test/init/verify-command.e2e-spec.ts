import { join } from 'node:path';
import { createTestDatabase, type TestDatabase } from '../support/db.js';
import { run } from './support/temp-app.js';

/**
 * `npx nestjs-durable verify` on the example app's own root module, which is complete only through
 * `AppModule.forRoot()` (as real apps build theirs): the class, `--call forRoot`, an exported
 * dynamic module and an exported factory all boot it.
 */
describe('nestjs-durable verify on the example app', () => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await createTestDatabase('verify_cli');
  });
  afterAll(() => db.drop());

  const verify = (...args: string[]) =>
    run(process.execPath, ['--import', 'tsx', join(process.cwd(), 'libs/durable/src/cli/main.ts'), 'verify', ...args], process.cwd(), {
      DATABASE_URL: db.url,
      NODE_OPTIONS: '',
    });

  it.each([
    ['the class, through its static forRoot()', ['--module', 'src/app.module.ts']],
    ['--call forRoot', ['--module', 'src/app.module.ts', '--export', 'AppModule', '--call', 'forRoot']],
    ['an exported dynamic module', ['--module', 'test/init/support/app-exports.ts', '--export', 'AppDynamic']],
    ['an exported factory', ['--module', 'test/init/support/app-exports.ts', '--export', 'makeAppModule']],
  ])(
    'boots %s and replays the runs',
    async (_how, args) => {
      const r = await verify(...args, '--json');
      expect({ code: r.code, err: r.err }).toEqual({ code: 0, err: '' });
      expect(JSON.parse(r.out)).toMatchObject({ ok: true, checked: 0 });
    },
    60_000,
  );

  it('refuses an export that is not a module, naming the exports', async () => {
    const r = await verify('--module', 'test/init/support/app-exports.ts', '--export', 'nothing');
    expect(r.code).toBe(2);
    expect(r.err).toContain('exports no module "nothing"');
    expect(r.err).toContain('exports: AppDynamic, AppModule, makeAppModule');
  }, 60_000);
});
