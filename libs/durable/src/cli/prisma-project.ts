import { readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { readConfigSchema, type ConfigSchema } from './config-text.js';
import { InitError } from './init-error.js';

const EXTENSIONS = ['.js', '.ts', '.mjs', '.cjs', '.mts', '.cts'];
/** Where Prisma 7 looks for its config file, in its order (@prisma/config's findPrismaConfigFile). */
export const CONFIG_CANDIDATES = [
  ...EXTENSIONS.map((e) => `prisma7.config${e}`),
  ...EXTENSIONS.map((e) => join('.config', `prisma7${e}`)),
  ...['prisma.config', join('.config', 'prisma'), join('.config', 'prisma.config')].flatMap((base) => [
    ...EXTENSIONS.map((e) => `${base}${e}`),
    ...EXTENSIONS.map((e) => join(base, `index${e}`)),
  ]),
];
/** Prisma's default schema locations when nothing configures one, in its order. */
export const DEFAULT_SCHEMAS = ['schema.prisma', join('prisma', 'schema.prisma')];

export interface TextFile {
  path: string;
  text: string;
}

/** Where the app's Prisma schema is, and who said so. */
export interface SchemaLocation {
  path: string;
  kind: 'file' | 'folder';
  source: 'command line' | 'config' | 'package.json' | 'default';
}

export interface PrismaProject {
  root: string;
  config: (TextFile & { schema: ConfigSchema }) | null;
  packageJson: (TextFile & { data: { prisma?: { schema?: unknown } } }) | null;
  schema: SchemaLocation;
}

/** A path as the user writes it: relative to `from`, with forward slashes. */
export const shown = (from: string, path: string) => relative(from, path).split(sep).join('/') || '.';

/**
 * Finds the schema the way the Prisma CLI does: --schema, else the config file's `schema`, else
 * (no config file: Prisma 6) package.json's `prisma.schema`, else ./schema.prisma or
 * ./prisma/schema.prisma. Paths in the config are relative to the config file's folder.
 */
export function locateProject(root: string, flags: { schema?: string; config?: string }): PrismaProject {
  const configPath = flags.config ? resolve(root, flags.config) : CONFIG_CANDIDATES.map((c) => join(root, c)).find(isFile);
  if (flags.config && !isFile(configPath!)) throw new InitError('NO_CONFIG', `--config ${flags.config}: no such file.`, 2);
  const config = configPath ? withText(configPath) : null;
  const configSchema = config ? readConfigSchema(config.text, shown(root, config.path)) : null;
  const pkgPath = join(root, 'package.json');
  const packageJson = isFile(pkgPath) ? { ...withText(pkgPath), data: parsePackageJson(pkgPath) } : null;

  const candidates = schemaCandidates(root, flags.schema, config, configSchema, packageJson?.data.prisma?.schema);
  for (const c of candidates) {
    const stat = statSync(c.path, { throwIfNoEntry: false });
    if (stat?.isFile() || stat?.isDirectory())
      return {
        root,
        config: config && { ...config, schema: configSchema! },
        packageJson,
        schema: { ...c, kind: stat.isFile() ? 'file' : 'folder' },
      };
  }
  const checked = candidates.map((c) => `${shown(root, c.path)} (${c.source})`).join(', ');
  throw new InitError(
    'NO_SCHEMA',
    `No Prisma schema found in ${root}: checked ${checked}. Run init in your app's folder, ` +
      `pass --schema <your schema file or folder>, or create a schema first (npx prisma init).`,
  );
}

/** Where Prisma would read the schema from, in its order of precedence. */
function schemaCandidates(
  root: string,
  flag: string | undefined,
  config: TextFile | null,
  configSchema: ConfigSchema | null,
  packageSchema: unknown,
): Omit<SchemaLocation, 'kind'>[] {
  if (flag) return [{ path: resolve(root, flag), source: 'command line' }];
  if (config && configSchema?.kind === 'literal') return [{ path: resolve(dirname(config.path), configSchema.value), source: 'config' }];
  if (config && configSchema?.kind === 'expression') {
    throw new InitError(
      'CONFIG_NOT_EDITABLE',
      `${shown(root, config.path)} computes \`schema\` (${configSchema.text}); init does not run the config. ` +
        `Run it with --schema <the file or folder that resolves to>.`,
    );
  }
  if (!config && typeof packageSchema === 'string') return [{ path: resolve(root, packageSchema), source: 'package.json' }];
  return DEFAULT_SCHEMAS.map((d) => ({ path: join(root, d), source: 'default' }));
}

const isFile = (path: string) => statSync(path, { throwIfNoEntry: false })?.isFile() ?? false;
const withText = (path: string): TextFile => ({ path, text: readFileSync(path, 'utf8') });

function parsePackageJson(path: string) {
  try {
    return JSON.parse(readFileSync(path, 'utf8'));
  } catch (e) {
    throw new InitError('NO_CONFIG', `${path} is not valid JSON (${(e as Error).message}). Fix it and run init again.`);
  }
}
