import type { DurableEngine } from 'nestjs-durable';
import { partitionOf, partitionSchema } from '../../libs/durable/src/store/partitions.js';
import { CitusCluster, countRuns, describeCitus } from '../support/citus-cluster.js';
import { clientEngine } from '../support/client-engine.js';
import { EngineHarness, eventually, sleep } from '../support/engine-harness.js';
import { WorkerProcess } from '../support/processes.js';

const PARTITIONS = 8;
const RUNS = 32;

/**
 * Distributed mode under failures, on a real Citus cluster (a coordinator and two worker nodes): runs
 * started in the app's transaction across the partitions, executed by worker processes, one of which
 * is SIGKILLed, one frozen past its lease, while a partition moves to the other node.
 */
describeCitus('distributed mode on Citus: kills, a frozen worker, a partition moved mid-run', () => {
  let cluster: CitusCluster;
  let h: EngineHarness;
  let client: DurableEngine;
  const workers: WorkerProcess[] = [];
  const spawn = async () => {
    const w = await WorkerProcess.start(h.db.url, { DURABLE_LEASE_MS: '2000', DURABLE_HEARTBEAT_MS: '400', DURABLE_CONCURRENCY: '8' });
    workers.push(w);
    return w;
  };

  beforeAll(async () => {
    cluster = await CitusCluster.start();
    h = EngineHarness.on(await cluster.database('durable_citus_chaos', PARTITIONS));
    client = await clientEngine(h.db.url, h.prisma as never);
  }, 120_000);
  afterAll(async () => {
    for (const w of workers) w.kill('SIGKILL');
    await client?.stop();
    await h?.close();
    await cluster?.stop();
  });

  it('every run ends SUCCEEDED with its ledger row written once, and no statement was refused for locking rows on several shards', async () => {
    const [a, b] = [await spawn(), await spawn()];
    const ids: string[] = [];
    await h.prisma.$transaction(
      async (tx) => {
        await tx.$executeRaw`INSERT INTO test_ledger (run_id, step) VALUES ('business', 'order')`;
        for (let i = 0; i < RUNS; i++) {
          const input = { steps: 3, ledger: true, slowStep: i % 3, slowMs: 150 };
          ids.push((await client.startRun('counted', input, { tx: tx as never })).id);
        }
        // Each start is a few statements through the caller's transaction, to several nodes: more than
        // Prisma's 5-s default on a loaded machine; and its connection may take longer than the 2-s
        // default to come while the two workers just spawned connect to every node.
      },
      { timeout: 60_000, maxWait: 20_000 },
    );
    const parts = new Set(ids.map((id) => partitionOf(id, PARTITIONS)));
    expect(parts.size).toBeGreaterThan(4);

    // A busy partition moves to the other worker node while its runs execute.
    const moving = partitionSchema(partitionOf(ids[0], PARTITIONS));
    const [shard] = await h.query<{ shardid: string; port: number }>(
      `SELECT shardid, nodeport AS port FROM citus_shards WHERE table_name = '${moving}.durable_runs'::regclass`,
    );
    const target = cluster.workers.find((w) => w.port !== Number(shard.port))!;
    const move = h.query(`SELECT citus_move_shard_placement($1, '127.0.0.1', $2, '127.0.0.1', $3, shard_transfer_mode => 'block_writes')`, [
      shard.shardid,
      shard.port,
      target.port,
    ]);

    await sleep(400);
    a.kill('SIGKILL');
    const c = await spawn();
    // b freezes for longer than its lease: its runs are swept to the others; its writes when it wakes are fenced off.
    b.kill('SIGSTOP');
    await sleep(3_500);
    b.kill('SIGCONT');
    await move;
    const [moved] = await h.query<{ port: number }>(
      `SELECT nodeport AS port FROM citus_shards WHERE table_name = '${moving}.durable_runs'::regclass`,
    );
    expect(Number(moved.port)).toBe(target.port);

    await eventually(
      async () => {
        const [row] = await h.query<{ n: number }>(countRuns(PARTITIONS, `status = 'SUCCEEDED' AND workflow_name = 'counted'`));
        return row.n === RUNS;
      },
      90_000,
      'every run SUCCEEDED',
    );
    // The kill and the freeze took runs away from their workers: they were recovered (claimed again).
    const [recovered] = await h.query<{ n: number }>(countRuns(PARTITIONS, 'attempt > 1'));
    expect(recovered.n).toBeGreaterThan(0);
    const ledger = await h.query<{ run_id: string; n: number }>(
      `SELECT run_id, count(*)::int AS n FROM test_ledger WHERE step = 'ledger' GROUP BY run_id`,
    );
    expect(ledger.filter((r) => r.n !== 1)).toEqual([]);
    expect(ledger.map((r) => r.run_id).sort()).toEqual([...ids].sort());
    expect(c.output).toContain('ready');
    const log = cluster.logTail(cluster.coordinator, 100_000) + cluster.workers.map((w) => cluster.logTail(w, 100_000)).join('\n');
    expect(log).not.toMatch(/could not run distributed query with FOR UPDATE/);
  }, 240_000);
});
