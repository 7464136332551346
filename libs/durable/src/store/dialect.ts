/**
 * The SQL dialects the store speaks: PostgreSQL, and the MySQL family (MariaDB 10.6+; MySQL 8
 * untested). Chosen once per engine, from the connection URL, the pool or the app's Prisma client;
 * only store/ looks at it.
 */
export type Dialect = 'postgres' | 'mysql';

/** mysql:// and mariadb:// URLs (Prisma's mysql provider and the mariadb driver read both). */
export const isMysqlUrl = (url: string): boolean => /^(mysql|mariadb):\/\//i.test(url);

/** The dialect of a Prisma client (or transaction client): Prisma records its datasource provider. */
export function dialectOfPrisma(prisma: unknown): Dialect {
  const provider = (prisma as { _activeProvider?: unknown } | null)?._activeProvider;
  return provider === 'mysql' ? 'mysql' : 'postgres';
}
