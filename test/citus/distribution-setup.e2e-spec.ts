import pg from 'pg';
import { Durable } from 'nestjs-durable';
import { runDistributeCommand } from '../../libs/durable/src/cli/distribute-command.js';
import { distributionStatements, partitionOfSql, readPartitions } from '../../libs/durable/src/store/distribution.js';
import '../../libs/durable/src/engine.js';
import '../../libs/durable/src/admin/admin-service.js';
import { partitionOf, partitionSchema, partitionText } from '../../libs/durable/src/store/partitions.js';
import { engineStatements } from '../../libs/durable/src/store/statement.js';
import { pgSqlClient } from '../../libs/durable/src/store/sql-client.js';
import { CitusCluster, describeCitus } from '../support/citus-cluster.js';
import { clientEngine } from '../support/client-engine.js';
import { EngineHarness, eventually } from '../support/engine-harness.js';
import type { TestDatabase } from '../support/db.js';

const PARTITIONS = 8;

/**
 * Setting up distributed mode on a real Citus cluster (a coordinator and two worker nodes on this
 * machine): the partition schemas land on the worker nodes, the shared tables become reference
 * tables, and the setup can run again.
 */
describeCitus('distributed mode: set-up on Citus', () => {
  let cluster: CitusCluster;
  let db: TestDatabase;
  let pool: pg.Pool;
  const query = async <T = Record<string, unknown>>(text: string) => (await pool.query(text)).rows as T[];

  beforeAll(async () => {
    cluster = await CitusCluster.start();
    db = await cluster.database('durable_citus', PARTITIONS);
    pool = new pg.Pool({ connectionString: db.url, max: 2 });
  }, 120_000);
  afterAll(async () => {
    await pool?.end();
    await cluster?.stop();
  });

  it('puts every partition on a worker node as a distributed schema holding the per-run tables, colocated', async () => {
    const shards = await query<{ schema: string; tables: number; nodes: number; groups: number }>(
      `SELECT split_part(table_name::text, '.', 1) AS schema, count(*)::int AS tables, count(DISTINCT nodeport)::int AS nodes,
              count(DISTINCT colocation_id)::int AS groups
       FROM citus_shards WHERE citus_table_type = 'schema' GROUP BY 1 ORDER BY 1`,
    );
    expect(shards.map((s) => s.schema)).toEqual(Array.from({ length: PARTITIONS }, (_, k) => partitionSchema(k)).sort());
    for (const s of shards) expect(s).toMatchObject({ tables: 8, nodes: 1, groups: 1 });
    const ports = await query<{ port: number }>(`SELECT DISTINCT nodeport AS port FROM citus_shards WHERE citus_table_type = 'schema'`);
    expect(new Set(ports.map((p) => p.port))).toEqual(new Set(cluster.workers.map((w) => w.port)));
    const reference = await query<{ t: string }>(
      `SELECT table_name::text AS t FROM citus_tables WHERE citus_table_type = 'reference' ORDER BY 1`,
    );
    expect(reference.map((r) => r.t)).toEqual(
      [
        'durable_distribution',
        'durable_hook_cursors',
        'durable_queue_limits',
        'durable_rate_windows',
        'durable_schedules',
        'durable_schema',
      ].sort(),
    );
    expect(await readPartitions(pgSqlClient(pool, { prepared: false }))).toBe(PARTITIONS);
  });

  it('runs again without change, refuses another partition count, and refuses new runs in the single-server tables', async () => {
    await cluster.distribute(db.url, PARTITIONS);
    expect(await query(`SELECT partitions FROM durable_distribution`)).toEqual([{ partitions: PARTITIONS }]);
    await expect(cluster.distribute(db.url, PARTITIONS * 2)).rejects.toThrow(
      /distributed over 8 partitions already: the count cannot change/,
    );
    expect(await query(`SELECT count(*)::int AS n FROM citus_schemas`)).toEqual([{ n: PARTITIONS }]);
    // An engine that started before the set-up (it writes to the single-server tables) is stopped short.
    await expect(query(`INSERT INTO durable_runs (id, workflow_name) VALUES ('late', 'w')`)).rejects.toThrow(
      /this database is distributed/,
    );
    const print = distributionStatements(PARTITIONS);
    expect(print.indexOf('BEGIN')).toBeLessThan(print.findIndex((st) => st.startsWith('INSERT INTO durable_distribution')));
  });

  it('keeps a sequence of its own in each partition', async () => {
    const ids: string[] = [];
    for (const k of [0, 5]) {
      const [row] = await query<{ id: string }>(
        `INSERT INTO ${partitionSchema(k)}.durable_run_events (run_id, kind) VALUES ('r${k}', 'created') RETURNING id::text`,
      );
      ids.push(row.id);
    }
    expect(ids).toEqual(['1', '1']);
  });

  /** Single-server statements Citus refuses in a partition as they are written: distributed mode sends others in their place. */
  const SINGLE_SERVER_ONLY = [
    'durable_cancel_run', // cancel, resume: a recursive CTE over the run's descendants (distributed: run-trees.ts)
    'durable_cancel_run_compensating',
    'durable_resume_run',
    'durable_claim_limited', // flow control (distributed: partitioned-flow-claim.ts)
    'durable_fire_schedules', // distributed mode fires through store/partitioned-schedules.ts
    'durable_insert_deduped', // distributed mode sends durable_insert_deduped_in_partition
    'durable_live_tick', // the admin live feed: statistics only in distributed mode
  ];

  it('plans every other fixed statement of the engine on one shard (with nulls for its parameters)', async () => {
    const refused: string[] = [];
    const multiShard: string[] = [];
    for (const [name, text] of engineStatements()) {
      if (!/\bdurable_[a-z_]+\b/.test(text.replace(/'[^']*'/g, ''))) continue; // no table: a setting or the clock
      if (name.startsWith('durable_testing_')) continue; // the testing kit's virtual clock, on a test database
      const params = Math.max(0, ...[...text.matchAll(/\$(\d+)/g)].map((m) => Number(m[1])));
      try {
        const plan = (await pool.query(`EXPLAIN (COSTS OFF) ${partitionText(text, 3)}`, Array(params).fill(null))).rows
          .map((r) => r['QUERY PLAN'] as string)
          .join('\n');
        const tasks = [...plan.matchAll(/Task Count: (\d+)/g)].map((m) => Number(m[1]));
        if (tasks.some((n) => n > 1)) multiShard.push(name);
      } catch (err) {
        refused.push(`${name}: ${(err as Error).message}`);
      }
    }
    expect(multiShard).toEqual([]);
    expect(refused.map((r) => r.split(':')[0]).sort()).toEqual([...SINGLE_SERVER_ONLY].sort());
  });

  it('computes the partition of a run id in SQL as the engine does', async () => {
    const ids = ['order-17', 'a:b:c', 'x:child:3', 'y:child:2:g4:17', ...Array.from({ length: 40 }, (_, i) => `run-${i}`)];
    const rows = await pool.query<{ id: string; k: number }>(
      `SELECT id, ${partitionOfSql('id', 13)} AS k FROM unnest($1::text[]) AS t(id)`,
      [ids],
    );
    expect(rows.rows.map((r) => [r.id, r.k])).toEqual(ids.map((id) => [id, partitionOf(id, 13)]));
  });

  it('moves the runs of a single server to their partitions (npx nestjs-durable distribute), where they go on', async () => {
    const single = await cluster.database('durable_citus_move', null);
    const h = EngineHarness.on(single);
    try {
      const client = await clientEngine(single.url, h.prisma as never, ['move']);
      const handles = await Promise.all(Array.from({ length: 12 }, (_, n) => client.startRun('move', { n })));
      const keyed = await client.startRun('move', { n: 99 }, { dedupeKey: 'once' });
      await client.stop();
      const out: string[] = [];
      const err: string[] = [];
      const io = { cwd: process.cwd(), out: (t: string) => out.push(t), err: (t: string) => err.push(t) };
      // An unfinished run of a dedupe key: its id does not give its key's partition, so the move waits for it.
      expect(await runDistributeCommand(['--partitions', '4'], io, { DATABASE_URL: single.url })).toBe(1);
      expect(err.at(-1)).toMatch(/dedupeKey or a debounce key are unfinished/);
      expect(await h.query('SELECT count(*)::int AS n FROM public.durable_runs')).toEqual([{ n: 13 }]);
      await h.query(`UPDATE public.durable_runs SET status = 'CANCELLED', finished_at = now() WHERE id = $1`, [keyed.id]);
      expect(await runDistributeCommand(['--partitions', '4'], io, { DATABASE_URL: single.url })).toBe(0);
      expect(out.join('\n')).toMatch(/Distributed mode set up: 4 partition\(s\)/);
      expect(err.filter((l) => l.startsWith('moved')).join('\n')).toMatch(/moved \d+ row\(s\) to durable_p\d\.durable_runs/);
      expect(await h.query('SELECT id FROM public.durable_runs')).toEqual([]);
      const engine = await h.engine({ move: async (input: { n: number }) => Durable.step('double', async () => input.n * 2) });
      await eventually(
        async () => (await Promise.all(handles.map((hd) => engine.getRun(hd.id)))).every((r) => r?.status === 'SUCCEEDED'),
        30_000,
        'the moved runs finish',
      );
      expect((await Promise.all(handles.map((hd) => engine.getRun(hd.id)))).map((r) => r?.output)).toEqual(
        Array.from({ length: 12 }, (_, n) => n * 2),
      );
      for (const hd of handles) {
        const [row] = await h.query(`SELECT status FROM ${partitionSchema(partitionOf(hd.id, 4))}.durable_runs WHERE id = $1`, [hd.id]);
        expect(row).toEqual({ status: 'SUCCEEDED' });
      }
      // Again: nothing to do; and a bad count is a usage error.
      expect(await runDistributeCommand(['--partitions', '4'], io, { DATABASE_URL: single.url })).toBe(0);
      expect(await runDistributeCommand(['--partitions', '6'], io, { DATABASE_URL: single.url })).toBe(1);
      expect(err.at(-1)).toMatch(/distributed over 4 partitions already/);
      expect(await runDistributeCommand(['--partitions', 'many'], io, { DATABASE_URL: single.url })).toBe(2);
    } finally {
      await h.close();
    }
  }, 120_000);
});
