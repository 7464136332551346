/**
 * The cost of one routed statement, apart from the engine's statement shapes: single-row statements
 * by primary key on a run's partition (a read, and an update that changes nothing but writes a row
 * version), sent by `clients` concurrent connections, and each server's CPU per statement.
 *
 *   single node:  to the server (durable_runs);
 *   via coordinator: to the coordinator, which plans and routes each to the worker node holding the partition;
 *   via workers:  to the worker node holding the partition (Citus 11+ syncs the metadata to every
 *                 node, so a worker node can take the app's statements: a statement on a partition of
 *                 its own runs there, with no coordinator in the way).
 *
 * What a statement costs when Citus routes it in one piece (fast-path router planning), which is what
 * the engine's statements would cost if every one of them were planned that way.
 */
import pg from 'pg';
import { partitionOf, partitionSchema } from '../../../libs/durable/src/store/partitions.js';
import { serverCpuMs } from './measure.js';
import { sql, type BenchNode } from './servers.js';

export interface ProbeRow {
  via: string;
  kind: string;
  statementsPerSec: number;
  /** CPU µs per statement by server role. */
  cpuUsPerStatement: Record<string, number>;
}

interface ProbeSetup {
  db: string;
  nodes: Array<{ role: string; node: BenchNode }>;
  partitions: number | null;
}

const KINDS = {
  read: (t: string) => `SELECT status FROM ${t} WHERE id = $1`,
  write: (t: string) => `UPDATE ${t} SET priority = priority WHERE id = $1`,
};

/** `statements` of each kind over the runs `ids`, per route, `clients` at a time. */
export async function routerProbe(s: ProbeSetup, ids: string[], statements: number, clients: number): Promise<ProbeRow[]> {
  const table = (id: string) => (s.partitions === null ? 'durable_runs' : `${partitionSchema(partitionOf(id, s.partitions))}.durable_runs`);
  // Route → the server a run's statement goes to.
  const routes: Array<{ via: string; to: (id: string) => BenchNode }> = [];
  if (s.partitions === null) routes.push({ via: 'single node', to: () => s.nodes[0].node });
  else {
    const coordinator = s.nodes[0].node;
    routes.push({ via: 'via coordinator', to: () => coordinator });
    const placed = await sql<{ schema: string; port: number }>(
      coordinator.url(s.db),
      `SELECT split_part(table_name::text, '.', 1) AS schema, nodeport AS port FROM citus_shards WHERE table_name::text LIKE '%.durable_runs'`,
    );
    const byPort = new Map(s.nodes.map(({ node }) => [node.port, node]));
    const holder = new Map(placed.map((p) => [p.schema, byPort.get(Number(p.port))!]));
    routes.push({ via: 'via workers', to: (id) => holder.get(partitionSchema(partitionOf(id, s.partitions!)))! });
  }
  const rows: ProbeRow[] = [];
  const pools = new Map<number, pg.Pool>();
  const pool = (n: BenchNode) => {
    let p = pools.get(n.port);
    if (!p) {
      p = new pg.Pool({ connectionString: n.url(s.db), max: clients });
      p.on('error', () => {});
      pools.set(n.port, p);
    }
    return p;
  };
  try {
    for (const r of routes)
      for (const [kind, text] of Object.entries(KINDS)) {
        // Warm every connection first (its catalog caches, the coordinator's connections to the workers).
        await run(Math.min(statements, clients * 20), clients, ids, (id) => pool(r.to(id)).query(text(table(id)), [id]));
        const cpu0 = s.nodes.map(({ node }) => serverCpuMs(node.pid));
        const t0 = performance.now();
        await run(statements, clients, ids, (id) => pool(r.to(id)).query(text(table(id)), [id]));
        const wallS = (performance.now() - t0) / 1000;
        const cpu1 = s.nodes.map(({ node }) => serverCpuMs(node.pid));
        rows.push({
          via: r.via,
          kind,
          statementsPerSec: statements / wallS,
          cpuUsPerStatement: Object.fromEntries(s.nodes.map(({ role }, i) => [role, ((cpu1[i] - cpu0[i]) * 1000) / statements])),
        });
      }
  } finally {
    for (const p of pools.values()) await p.end().catch(() => {});
  }
  return rows;
}

async function run(n: number, clients: number, ids: string[], send: (id: string) => Promise<unknown>): Promise<void> {
  let next = 0;
  const loop = async () => {
    while (next < n) await send(ids[next++ % ids.length]);
  };
  await Promise.all(Array.from({ length: clients }, loop));
}
