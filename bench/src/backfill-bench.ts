/**
 * npm run bench -- backfill [--rows 1000000] [--batch 1000] [--ranges 2] [--pg-url URL]
 * Durable.backfill against a hand-written keyset loop doing the same writes, side by side on one
 * table: N order rows (id, customer, amount, total, updated_at); each side sets total = amount * 2
 * on every row, batch by batch, and commits its cursor with the batch (the loop in a cursor table of
 * its own, the backfill as its step's checkpoint). Both talk to Postgres through the same pg
 * connections (a minimal Prisma-like client), so the difference is the engine's own cost per batch.
 * Prints rows/s of each, the backfill's overhead, and CPU of this process per 1,000 rows; then
 * --ranges backfills at once, each over its share of the key range (0: not measured).
 * Uses the database bench_backfill (dropped at the end).
 */
import { parseArgs } from 'node:util';
import pg from 'pg';
import { Durable, DurableEngine, WorkflowRegistry } from 'nestjs-durable/engine';
import { benchDbUrl, dropDatabase, recreateDatabase, withClient } from './db.js';
import { createSchema } from './peers/ours-lib.js';
import { PG_URL_OPTION } from './cli-args.js';

type Tx = {
  $queryRawUnsafe<T>(sql: string, ...v: unknown[]): Promise<T>;
  $executeRawUnsafe(sql: string, ...v: unknown[]): Promise<number>;
};

/** The part of PrismaClient the engine uses for transactional steps, on a pg pool. */
function pgPrisma(pool: pg.Pool) {
  const on = (q: { query: pg.Pool['query'] }): Tx => ({
    $queryRawUnsafe: async <T>(sql: string, ...v: unknown[]) => (await q.query(sql, v)).rows as T,
    $executeRawUnsafe: async (sql: string, ...v: unknown[]) => (await q.query(sql, v)).rowCount ?? 0,
  });
  return {
    ...on(pool),
    async $transaction<R>(fn: (tx: Tx) => Promise<R>): Promise<R> {
      const c = await pool.connect();
      try {
        await c.query('BEGIN');
        const r = await fn(on(c as unknown as { query: pg.Pool['query'] }));
        await c.query('COMMIT');
        return r;
      } catch (err) {
        await c.query('ROLLBACK').catch(() => undefined);
        throw err;
      } finally {
        c.release();
      }
    },
  };
}

const READ = 'SELECT id, amount FROM bench_orders WHERE id > $1 ORDER BY id LIMIT $2';
/** READ within a key range: up to $3. */
const READ_RANGE = 'SELECT id, amount FROM bench_orders WHERE id > $1 AND id <= $3 ORDER BY id LIMIT $2';
const WRITE = `UPDATE bench_orders o SET total = u.amount * 2, updated_at = now()
  FROM unnest($1::bigint[], $2::int[]) AS u(id, amount) WHERE o.id = u.id`;

export async function runBackfillBench(argv: string[]): Promise<void> {
  const { values: a } = parseArgs({
    args: argv,
    options: {
      rows: { type: 'string', default: '1000000' },
      batch: { type: 'string', default: '1000' },
      ranges: { type: 'string', default: '2' },
      'pg-url': PG_URL_OPTION,
    },
  });
  const rows = Number(a.rows);
  const batch = Number(a.batch);
  const ranges = Number(a.ranges);
  const url = benchDbUrl(a['pg-url']!, 'backfill');
  await recreateDatabase(url);
  await createSchema(url);
  const t0 = Date.now();
  await withClient(url, async (c) => {
    await c.query(`CREATE TABLE bench_orders (id bigint PRIMARY KEY, customer text NOT NULL, amount int NOT NULL, total int,
                   updated_at timestamptz NOT NULL DEFAULT now())`);
    await c.query(
      `INSERT INTO bench_orders (id, customer, amount) SELECT i, 'customer-' || (i % 50000), (i % 997) + 1 FROM generate_series(1, $1) i`,
      [rows],
    );
    await c.query('CREATE TABLE bench_loop_cursor (name text PRIMARY KEY, after bigint NOT NULL, done bigint NOT NULL)');
    await c.query('VACUUM ANALYZE bench_orders');
  });
  process.stderr.write(`generated ${rows} rows in ${((Date.now() - t0) / 1000).toFixed(1)} s\n`);
  const pool = new pg.Pool({ connectionString: url, max: 4 });
  const prisma = pgPrisma(pool);

  // The hand-written loop: read a batch after the cursor, write it, move the cursor, in one transaction.
  const loop = async () => {
    let after = 0;
    let done = 0;
    for (;;) {
      const n = await prisma.$transaction(async (tx) => {
        const got = await tx.$queryRawUnsafe<Array<{ id: string; amount: number }>>(READ, after, batch);
        if (!got.length) return 0;
        await tx.$executeRawUnsafe(
          WRITE,
          got.map((r) => r.id),
          got.map((r) => r.amount),
        );
        after = Number(got[got.length - 1].id);
        await tx.$executeRawUnsafe(
          `INSERT INTO bench_loop_cursor (name, after, done) VALUES ('totals', $1, $2)
           ON CONFLICT (name) DO UPDATE SET after = EXCLUDED.after, done = EXCLUDED.done`,
          after,
          done + got.length,
        );
        return got.length;
      });
      done += n;
      if (n < batch) return done;
    }
  };

  // The backfill of the rows after `from` up to `to` (null: the whole table, with the loop's READ), or one key range of it.
  const totals = (from: number, to: number | null, estimate?: number) =>
    Durable.backfill<{ id: string; amount: number }, number>(
      { batchSize: batch },
      {
        read: (after, limit, tx: Tx) =>
          to === null ? tx.$queryRawUnsafe(READ, after ?? from, limit) : tx.$queryRawUnsafe(READ_RANGE, after ?? from, limit, to),
        key: (r) => Number(r.id),
        process: async (got, tx: Tx) => {
          await tx.$executeRawUnsafe(
            WRITE,
            got.map((r) => r.id),
            got.map((r) => r.amount),
          );
        },
        ...(estimate === undefined ? {} : { estimate: async () => estimate }),
      },
    );
  const registry = new WorkflowRegistry();
  registry.register({ name: 'totals', queue: 'default', options: {}, run: () => totals(0, null, rows) });
  registry.register({
    name: 'totalsRange',
    queue: 'default',
    options: {},
    run: (input: unknown) => totals((input as { from: number }).from, (input as { to: number }).to),
  });
  const engine = new DurableEngine({ registry, connection: url, prisma, options: { concurrency: Math.max(1, ranges) } });
  await engine.start();

  const measure = async (what: string, fn: () => Promise<number>) => {
    await withClient(url, (c) => c.query('UPDATE bench_orders SET total = NULL').then(() => c.query('VACUUM bench_orders')));
    const cpu0 = process.cpuUsage();
    const w0 = Date.now();
    const n = await fn();
    const secs = (Date.now() - w0) / 1000;
    const cpu = process.cpuUsage(cpu0);
    const [{ left }] = await withClient(
      url,
      async (c) => (await c.query('SELECT count(*)::int AS left FROM bench_orders WHERE total IS NULL')).rows,
    );
    if (n !== rows || left !== 0) throw new Error(`${what}: ${n} rows done, ${left} left`);
    return { what, secs, rate: rows / secs, cpuMsPer1k: ((cpu.user + cpu.system) / 1000 / rows) * 1000 };
  };
  const results: Array<Awaited<ReturnType<typeof measure>>> = [];
  // Alternated, twice each: the second pass of each runs on a table the first one already rewrote.
  for (let i = 0; i < 2; i++) {
    results.push(await measure('hand-written keyset loop', loop));
    results.push(
      await measure('Durable.backfill', async () => {
        const h = await engine.startRun('totals', {}, { id: `totals-${i}` });
        return ((await h.result({ timeoutMs: 24 * 3600_000 })) as { rows: number }).rows;
      }),
    );
  }
  if (ranges > 1) {
    results.push(
      await measure(`${ranges} backfills over key ranges`, async () => {
        const share = Math.ceil(rows / ranges);
        const handles = await Promise.all(
          Array.from({ length: ranges }, (_, i) =>
            engine.startRun('totalsRange', { from: i * share, to: Math.min(rows, (i + 1) * share) }),
          ),
        );
        const done = await Promise.all(handles.map((h) => h.result({ timeoutMs: 24 * 3600_000 }) as Promise<{ rows: number }>));
        return done.reduce((n, d) => n + d.rows, 0);
      }),
    );
  }
  await engine.stop();
  await pool.end();
  await dropDatabase(url);

  const best = (what: string) => results.filter((r) => r.what === what).sort((x, y) => y.rate - x.rate)[0];
  const hand = best('hand-written keyset loop');
  const durable = best('Durable.backfill');
  const line = (r: (typeof results)[number]) =>
    `  ${r.what.padEnd(26)} ${r.secs.toFixed(1).padStart(7)} s  ${Math.round(r.rate).toLocaleString('en').padStart(9)} rows/s  ${r.cpuMsPer1k.toFixed(2)} CPU-ms per 1,000 rows (this process)`;
  process.stdout.write(
    `backfill of ${rows.toLocaleString('en')} rows, batches of ${batch} (best of 2 alternated passes each):\n` +
      `${line(hand)}\n${line(durable)}\n` +
      `  Durable.backfill at ${((100 * durable.rate) / hand.rate).toFixed(0)} % of the hand-written loop's rate\n` +
      (ranges > 1 ? `${line(results[results.length - 1])} (one pass)\n` : ''),
  );
}
