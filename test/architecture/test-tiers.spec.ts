import { existsSync } from 'node:fs';
// @ts-expect-error jest.config.js is plain JavaScript without types
import { BROWSER, PROCESS, UNIT } from '../../jest.config.js';

/** A test file listed in a tier that no longer exists (renamed or moved) would silently fall back to `integration`. */
describe('test tiers (jest.config.js)', () => {
  it.each([
    ['unit', UNIT as string[]],
    ['process', PROCESS as string[]],
    ['browser', BROWSER as string[]],
  ])('lists only test files that exist (%s)', (_tier, files) => {
    expect(files.filter((f) => !existsSync(f))).toEqual([]);
  });
});
