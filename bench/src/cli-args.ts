/** What the bench's commands share in parsing their flags. */

/** The `--pg-url` flag: the server every peer runs against (BENCH_PG_URL, else the local one). */
export const PG_URL_OPTION = { type: 'string', default: process.env.BENCH_PG_URL ?? 'postgres://postgres@127.0.0.1:5432' } as const;

/** The value of `--<name>` as a whole number ≥ 1; throws naming the flag otherwise. */
export function positiveInt(name: string, value: string | undefined): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1) throw new Error(`--${name} must be an integer ≥ 1, got ${value}`);
  return n;
}
