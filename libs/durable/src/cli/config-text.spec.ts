import { readConfigSchema, withConfigSchema } from './config-text.js';
import { InitError } from './init-error.js';

const config = (body: string) => `import { defineConfig } from 'prisma/config';\n\nexport default defineConfig({\n${body}\n});\n`;

describe('prisma.config.ts schema property (text only)', () => {
  it('reads a literal in either quote style, ignoring comments that mention schema:', () => {
    const text = config(
      `  // schema: 'old/place.prisma' (moved)\n  /* schema: "x" */\n  schema: "prisma/schema.prisma",\n  migrations: { path: 'prisma/migrations' },`,
    );
    const s = readConfigSchema(text, 'prisma.config.ts');
    expect(s).toMatchObject({ kind: 'literal', value: 'prisma/schema.prisma' });
    expect(withConfigSchema(text, 'prisma.config.ts', 'prisma')).toBe(text.replace('"prisma/schema.prisma"', '"prisma"'));
  });

  it('does not take ?schema= in a URL or a schema of another word for the property', () => {
    const text = config(`  datasource: { url: 'postgresql://u@h/db?schema=app' },\n  dbSchema: 'x',`);
    expect(readConfigSchema(text, 'c')).toEqual({ kind: 'absent' });
  });

  it('reports an expression it cannot evaluate, and refuses to edit it', () => {
    const text = config(`  schema: path.join('prisma', 'schema.prisma'),`);
    expect(readConfigSchema(text, 'c')).toEqual({ kind: 'expression', text: "path.join('prisma'" });
    expect(() => withConfigSchema(text, 'prisma.config.ts', 'prisma')).toThrow(/computes `schema`.*by hand/);
    expect(readConfigSchema(config("  schema: 'prisma/' + name,"), 'c').kind).toBe('expression');
    expect(readConfigSchema(config('  schema: `${dir}/schema.prisma`,'), 'c').kind).toBe('expression');
  });

  it('inserts the property at the top of defineConfig({ … }), indented like the next line, in the file’s quotes', () => {
    const text = config(`    datasource: { url: env('DATABASE_URL') },`);
    expect(withConfigSchema(text, 'c', 'prisma')).toBe(config(`    schema: 'prisma',\n    datasource: { url: env('DATABASE_URL') },`));
    const double = 'import { defineConfig } from "prisma/config";\nexport default defineConfig({ datasource: { url: "x" } });\n';
    expect(withConfigSchema(double, 'c', 'prisma')).toBe(double.replace('defineConfig({', 'defineConfig({ schema: "prisma",'));
  });

  it('inserts into a plain `export default { … } satisfies PrismaConfig`', () => {
    const text = "import type { PrismaConfig } from 'prisma';\nexport default {\n  datasource: { url: 'x' },\n} satisfies PrismaConfig;\n";
    expect(withConfigSchema(text, 'c', 'db')).toContain("export default {\n  schema: 'db',\n  datasource");
  });

  it('refuses a config of another shape, or with two schema properties', () => {
    expect(() => withConfigSchema('module.exports = makeConfig();\n', 'prisma.config.cjs', 'prisma')).toThrow(InitError);
    const two = config(`  schema: 'a.prisma',\n  nested: { schema: 'b.prisma' },`);
    expect(() => readConfigSchema(two, 'prisma.config.ts')).toThrow(/2 `schema:` properties.*--schema/);
  });
});
