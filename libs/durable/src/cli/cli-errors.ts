import { errorText } from '../errors/error-text.js';
import { DurableError, SchemaMissingError, SchemaOutdatedError, SchemaTooNewError } from '../errors/index.js';
import { safeText } from './safe-text.js';

/** The command line's exit codes (every command; verify's 1 means "some run would fail"). */
export const EXIT = {
  /** Done, or nothing to do. */
  ok: 0,
  /** Refused: nothing changed; the message says why and what to do. */
  refused: 1,
  /** Bad command line (or, for verify, the app module did not boot). */
  usage: 2,
  /** The database could not be used: unreachable, login refused, or without the nestjs-durable tables. */
  database: 3,
  /** An unexpected error (a bug): rerun with --verbose and report the stack. */
  unexpected: 4,
} as const;

/** A refusal of the command line itself (exit code 1), e.g. an ambiguous id prefix. */
export class CliRefusal extends Error {}

/** Node's codes for a server that cannot be reached. */
const UNREACHABLE = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH', 'ECONNRESET', 'EPIPE']);

/** Where a database URL points, without its password: "user@host:port/db". */
export function whereDb(url: string | undefined): string {
  if (!url) return 'the database';
  try {
    const u = new URL(url);
    const user = u.username ? `${decodeURIComponent(u.username)}@` : '';
    const port = u.port || (/^(mysql|mariadb):/.test(url ?? '') ? '3306' : '5432');
    return `${user}${u.hostname || 'localhost'}:${port}${u.pathname && u.pathname !== '/' ? u.pathname : ''}`;
  } catch {
    return 'the database (DATABASE_URL is not a URL)';
  }
}

/** MariaDB/MySQL errors (the mariadb driver's errno) as the PostgreSQL SQLSTATE that means the same to the user. */
const MYSQL_ERRNO: Record<number, string> = { 1045: '28P01', 1044: '28000', 1049: '3D000', 1146: '42P01', 1054: '42703' };
function mysqlSqlState(c: unknown): string | undefined {
  const errno = (c as { errno?: unknown; sqlState?: unknown } | null)?.errno;
  return typeof errno === 'number' && (c as { sqlState?: unknown }).sqlState !== undefined ? MYSQL_ERRNO[errno] : undefined;
}

function causes(e: unknown): unknown[] {
  const chain: unknown[] = [];
  for (let c = e, i = 0; c && i < 5; c = (c as { cause?: unknown }).cause, i++) chain.push(c);
  return chain;
}

/** The exit code and the one line (what failed, what to do) for what a command threw. */
export function describeFailure(e: unknown, url: string | undefined): { code: number; line: string } {
  const at = whereDb(url);
  for (const c of causes(e)) {
    if (c instanceof SchemaMissingError || c instanceof SchemaOutdatedError || c instanceof SchemaTooNewError)
      return { code: EXIT.database, line: `${at}: ${c.message}` };
    if (c instanceof DurableError || c instanceof CliRefusal) return { code: EXIT.refused, line: c.message };
    const code = mysqlSqlState(c) ?? (c as { code?: unknown })?.code;
    if (typeof code !== 'string') continue;
    const msg = errorText(c);
    if (code === '28P01' || code === '28000')
      return {
        code: EXIT.database,
        line: `cannot log in to ${at}: ${msg}. Check the user and password in DATABASE_URL (or --database-url).`,
      };
    if (code === '3D000')
      return { code: EXIT.database, line: `${msg} at ${at}. Check the database name in DATABASE_URL (or --database-url).` };
    if (code === '42P01' || code === '42703' || code === '42883')
      return {
        code: EXIT.database,
        line:
          `${at} has no nestjs-durable tables, or older ones (${msg}). Point DATABASE_URL at the app's database, or create ` +
          (/^(mysql|mariadb):/.test(url ?? '')
            ? `the tables from node_modules/nestjs-durable/prisma/schema.mysql.sql (docs/databases.md).`
            : `the tables: npx nestjs-durable init, then npx prisma migrate deploy.`),
      };
    if (UNREACHABLE.has(code) || code.startsWith('08') || code === '57P03')
      return {
        code: EXIT.database,
        line: `cannot reach ${at} (${msg}). Is the database server running there? Check the host and port in DATABASE_URL.`,
      };
  }
  if (/timeout exceeded when trying to connect|Connection terminated/i.test(errorText(e)))
    return {
      code: EXIT.database,
      line: `cannot reach ${at} (${errorText(e)}). Is the database server running there? Check the host and port in DATABASE_URL.`,
    };
  if (/password must be a string|SASL/i.test(errorText(e)))
    return { code: EXIT.database, line: `cannot log in to ${at}: ${errorText(e)}. Check the user and password in DATABASE_URL.` };
  return { code: EXIT.unexpected, line: `unexpected error: ${errorText(e)} (rerun with --verbose for the stack, and report it)` };
}

/** Prints the failure as one line (and, with --verbose, the stack); returns the exit code. */
export function reportFailure(e: unknown, o: { url?: string; verbose?: boolean; prefix?: string; err: (text: string) => void }): number {
  const { code, line } = describeFailure(e, o.url);
  o.err(`${o.prefix ?? 'nestjs-durable'}: ${safeText(line)}`);
  if (o.verbose)
    o.err(
      String((e as Error)?.stack ?? errorText(e))
        .split('\n')
        .map(safeText)
        .join('\n'),
    );
  return code;
}
