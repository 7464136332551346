// Every TypeScript sample of the user documentation (README.md, libs/durable/README.md, docs/**)
// type-checks against the library's source, so a renamed option or a changed signature breaks a
// test instead of a reader's first try. Samples are complete files, written as if they were a file
// in the app's src/ folder (so `./prisma/prisma.service.js` and `./generated/prisma/client.js` are
// the example app's). A sample that is deliberately a piece of a file is fenced ```ts fragment.
import { join } from 'node:path';
import { compileSamples } from './compile-samples.js';
import { repoRoot, typeScriptSamples, userDocs, type CodeBlock } from './markdown.js';

describe('TypeScript samples of the documentation', () => {
  const samples = userDocs().flatMap((f) => typeScriptSamples(f));

  it('finds the samples', () => {
    expect(samples.length).toBeGreaterThan(10);
  });

  it('all type-check against the library (fence a deliberate fragment as ```ts fragment)', () => {
    expect(compileSamples(samples)).toEqual([]);
  }, 180_000);

  it('fails on a sample that does not type-check', () => {
    const broken: CodeBlock = {
      file: join(repoRoot, 'docs', 'broken.md'),
      line: 1,
      info: 'ts',
      code: "import { Durable } from 'nestjs-durable';\nexport const at: Date = await Durable.now();\n",
    };
    const errors = compileSamples([broken]);
    expect(errors.join('\n')).toMatch(/docs\/broken\.md:3: Type 'number' is not assignable to type 'Date'/);
  }, 180_000);
});
