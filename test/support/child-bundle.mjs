// Bundles the entry of a test's child process (a worker, a starter) into one ES module, so the
// child starts with plain `node` instead of `node --import tsx`: tsx transforms and resolves every
// TypeScript module of the library and the test code through its loader on each start (about 3 s
// of CPU a worker on a 2-core machine), a bundle loads in about 1 s. Packages stay external
// (resolved from the repository's node_modules, next to which the bundle is written).
//
//   node test/support/child-bundle.mjs <entry.ts>   prints the path of the bundle
//
// The bundle starts with test/support/exit-with-parent.ts (what `--import` preloaded before). Each
// module keeps its own import.meta.url (files read next to a module are found as before), class and
// function names are kept, and the file is named by its content: concurrent builds of one entry
// write the same file.
import { createHash } from 'node:crypto';
import { mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { build } from 'esbuild';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
const entry = resolve(root, process.argv[2]);
const out = join(root, 'node_modules', '.cache', 'durable-test-processes');
mkdirSync(out, { recursive: true });

const ownImportMetaUrl = {
  name: 'own-import-meta-url',
  setup(b) {
    b.onLoad({ filter: /\.ts$/ }, (args) => {
      if (args.path.includes(`${join('node_modules', '')}`)) return undefined;
      const text = readFileSync(args.path, 'utf8').replace(/import\.meta\.url/g, JSON.stringify(pathToFileURL(args.path).href));
      return { contents: text, loader: 'ts' };
    });
  },
};

const result = await build({
  stdin: {
    contents: `import ${JSON.stringify(join(root, 'test/support/exit-with-parent.ts'))};\nimport ${JSON.stringify(entry)};\n`,
    resolveDir: root,
    sourcefile: 'child-entry.ts',
    loader: 'ts',
  },
  bundle: true,
  platform: 'node',
  format: 'esm',
  target: 'node20',
  packages: 'external',
  keepNames: true,
  tsconfig: join(root, 'tsconfig.json'),
  plugins: [ownImportMetaUrl],
  write: false,
  logLevel: 'warning',
});
const code = result.outputFiles[0].contents;
const file = join(out, `${basename(entry, '.ts')}-${createHash('sha256').update(code).digest('hex').slice(0, 16)}.mjs`);
const temp = `${file}.${process.pid}.tmp`;
writeFileSync(temp, code);
try {
  renameSync(temp, file);
} finally {
  rmSync(temp, { force: true });
}
process.stdout.write(file);
