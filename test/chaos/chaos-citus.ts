import { partitionSchema } from '../../libs/durable/src/store/partitions.js';
import type { CitusCluster } from '../support/citus-cluster.js';
import type { ChaosFacts } from './chaos-facts.js';

/**
 * The outage of a chaos run on Citus (settings.database 'citus'): a partition moves to the other
 * worker node with its runs in flight. The partition with the most unfinished runs is chosen; its
 * schema's tables (colocated: one shard group) move together with citus_move_shard_placement.
 * Citus copies them by logical replication and blocks writes to them only for the final catch-up.
 */
export interface ShardMoveFacts {
  partition: string;
  shardId: string;
  fromPort: number;
  toPort: number;
  /** Unfinished runs of the partition when the move started, and RUNNING ones among them. */
  unfinishedAtStart: number;
  runningAtStart: number;
  startedAt: number;
  endedAt: number;
  /** The placement the coordinator's metadata shows afterwards. */
  portAfter: number | null;
}

/** 'auto': logical replication where every table has a replica identity (the durable tables have primary keys). */
const TRANSFER_MODE = 'auto';

export class ShardMoveOutage {
  private facts: ShardMoveFacts | null = null;

  constructor(
    private readonly cluster: CitusCluster,
    /** The distributed database, on the coordinator. */
    private readonly url: string,
    private readonly partitions: number,
    private readonly log: (line: string) => void,
  ) {}

  async run(): Promise<void> {
    const counts = await Promise.all(
      Array.from({ length: this.partitions }, async (_, k) => {
        const [row] = await this.cluster.sql<{ unfinished: number; running: number }>(
          this.url,
          `SELECT count(*) FILTER (WHERE status NOT IN ('SUCCEEDED','FAILED','CANCELLED'))::int AS unfinished,
                  count(*) FILTER (WHERE status = 'RUNNING')::int AS running
           FROM ${partitionSchema(k)}.durable_runs`,
        );
        return { k, ...row };
      }),
    );
    const busiest = counts.reduce((a, b) => (b.running > a.running || (b.running === a.running && b.unfinished > a.unfinished) ? b : a));
    const partition = partitionSchema(busiest.k);
    const [shard] = await this.placement(partition);
    const target = this.cluster.workers.find((w) => w.port !== shard.port);
    if (!target) throw new Error(`no worker node to move ${partition} to (it is on :${shard.port})`);
    this.log(
      `moving partition ${partition} (shard group of ${shard.shardid}, ${busiest.unfinished} unfinished runs, ${busiest.running} RUNNING) ` +
        `from the worker node :${shard.port} to :${target.port} (citus_move_shard_placement, ${TRANSFER_MODE})…`,
    );
    const startedAt = Date.now();
    await this.cluster.sql(
      this.url,
      `SELECT citus_move_shard_placement($1, '127.0.0.1', $2, '127.0.0.1', $3, shard_transfer_mode => '${TRANSFER_MODE}')`,
      [shard.shardid, shard.port, target.port],
    );
    const endedAt = Date.now();
    const [after] = await this.placement(partition);
    this.facts = {
      partition,
      shardId: shard.shardid,
      fromPort: shard.port,
      toPort: target.port,
      unfinishedAtStart: busiest.unfinished,
      runningAtStart: busiest.running,
      startedAt,
      endedAt,
      portAfter: after?.port ?? null,
    };
    this.log(`partition ${partition} is on :${after?.port ?? '?'} now, after ${((endedAt - startedAt) / 1000).toFixed(1)} s`);
  }

  /** What the move did (null if it never happened). */
  result(): ShardMoveFacts | null {
    return this.facts;
  }

  private async placement(partition: string): Promise<Array<{ shardid: string; port: number }>> {
    const rows = await this.cluster.sql<{ shardid: string; port: number }>(
      this.url,
      `SELECT shardid::text, nodeport AS port FROM citus_shards WHERE table_name = '${partition}.durable_runs'::regclass`,
    );
    return rows.map((r) => ({ shardid: r.shardid, port: Number(r.port) }));
  }
}

/**
 * Report lines and violations of a shard move: it happened, with runs of the partition in flight, and
 * the metadata shows the new node. Also how many leases were lost (lease_lost, lease_expired) from the
 * start of the move until a lease after its end: a write-blocked partition delays heartbeats.
 */
export function judgeShardMove(f: ShardMoveFacts | null, facts: ChaosFacts, leaseMs: number): { lines: string[]; violations: string[] } {
  if (!f) return { lines: ['shard move: none happened'], violations: ['the shard move never happened (the chaos ended before it?)'] };
  let lost = 0;
  for (const h of facts.history.values())
    lost += h.filter((e) => ['lease_lost', 'lease_expired'].includes(e.kind) && e.t >= f.startedAt && e.t <= f.endedAt + leaseMs).length;
  const lines = [
    `shard move: partition ${f.partition} moved from :${f.fromPort} to :${f.toPort} in ${((f.endedAt - f.startedAt) / 1000).toFixed(2)} s, ` +
      `with ${f.unfinishedAtStart} unfinished runs of it (${f.runningAtStart} RUNNING) in flight; ` +
      `leases lost or expired from its start until ${leaseMs} ms after its end (any partition): ${lost}`,
  ];
  const violations: string[] = [];
  if (f.portAfter !== f.toPort) violations.push(`shard move: ${f.partition} is on :${f.portAfter ?? '?'} afterwards, not on :${f.toPort}`);
  if (f.unfinishedAtStart === 0) violations.push(`shard move: partition ${f.partition} had no run in flight when it moved`);
  return { lines, violations };
}
