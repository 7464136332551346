import pg from 'pg';

/**
 * Records every statement sent through the pg driver in this process (the engine's pool, its
 * transactions, and Prisma's adapter, which uses the same driver) until stop(): each distinct text
 * once, with the parameters it was first sent with.
 */
export function recordStatements(): { statements: Map<string, unknown[]>; stop: () => void } {
  const statements = new Map<string, unknown[]>();
  const proto = pg.Client.prototype as unknown as { query: (...args: unknown[]) => unknown };
  const original = proto.query;
  proto.query = function (this: unknown, ...args: unknown[]) {
    const [first, second] = args;
    const text = typeof first === 'string' ? first : (first as { text?: string } | null)?.text;
    const values = typeof first === 'string' ? second : ((first as { values?: unknown[] } | null)?.values ?? second);
    if (typeof text === 'string' && !statements.has(text)) statements.set(text, Array.isArray(values) ? values : []);
    return original.apply(this, args);
  };
  return { statements, stop: () => void (proto.query = original) };
}
