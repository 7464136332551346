import { readFileSync } from 'node:fs';
import { join } from 'node:path';

/** Files and metadata of the package that are kept in two places, or that npm only reads at install time (no database, no build). */
const root = process.cwd();
const read = (path: string) => readFileSync(join(root, path), 'utf8');
const pkg = JSON.parse(read('libs/durable/package.json')) as {
  license: string;
  files: string[];
  peerDependencies: Record<string, string>;
  dependencies: Record<string, string>;
};

describe('package metadata', () => {
  it('ships the repository LICENSE (MIT, as package.json says): libs/durable/LICENSE is the same file', () => {
    expect(pkg.license).toBe('MIT');
    expect(read('LICENSE')).toMatch(/^MIT License\n\nCopyright \(c\) \d{4} nestjs-durable contributors\n/);
    expect(read('libs/durable/LICENSE')).toBe(read('LICENSE'));
    expect(pkg.files).toContain('LICENSE');
  });

  it("keeps the example app's durable.prisma equal to the package's (the one `nestjs-durable init` copies)", () => {
    expect(read('prisma/schema/durable.prisma')).toBe(read('libs/durable/prisma/durable.prisma'));
  });

  // An open range (">=x") would let npm pair the package with a future major it was never tried
  // against; over a pre-release it would even accept the next major's pre-releases.
  it.each(Object.entries({ ...pkg.peerDependencies, ...pkg.dependencies }))('bounds the range of %s above (%s)', (_name, range) => {
    for (const alternative of range.split('||').map((r) => r.trim())) expect(alternative).toMatch(/^[\^~]\d|\s<\d/);
  });
});
