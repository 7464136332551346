import { join } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import pg from 'pg';
import { applyMigrations } from '../../libs/durable/src/embedded-postgres/migrations.js';
import { TEST_TABLES } from '../support/global-setup.js';
import type { PgCluster } from '../support/pg-cluster.js';
import type { ChaosFacts } from './chaos-facts.js';

/** Creates database `db` on the cluster's primary, migrated like the test template, with the test tables; returns its multi-host URL. */
export async function prepareClusterDatabase(cluster: PgCluster, db: string): Promise<string> {
  const run = async (url: string, sql: string) => {
    const c = new pg.Client({ connectionString: url });
    await c.connect();
    try {
      await c.query(sql);
    } finally {
      await c.end();
    }
  };
  await run(cluster.primary.url('postgres'), `CREATE DATABASE ${db}`);
  await applyMigrations(cluster.primary.url(db), join(process.cwd(), 'prisma', 'migrations'));
  await run(cluster.primary.url(db), TEST_TABLES);
  return cluster.url(db);
}

/** What the failover did and cost, for the report. Times are Date.now() values (the servers run on this host). */
export interface FailoverFacts {
  replication: 'sync' | 'async';
  killedAt: number;
  /** When `pg_ctl promote` was called (the old primary is dead by then: every claim after it is on the new one), and when the standby accepted writes. */
  promotingAt: number;
  promotedAt: number;
  /**
   * Checkpoints (durable_steps rows) the old primary had committed when it died, missing on the new
   * primary at its promotion: read from the old primary's data folder, restarted alone afterwards
   * (crash recovery replays everything it acknowledged).
   */
  lostCheckpoints: number;
  /** Runs the old primary had finished when it died, unfinished on the new one at its promotion. */
  lostRunEnds: number;
  /** Checkpoints the old primary held when it died (to put the losses in proportion). */
  oldCheckpoints: number;
  /** Replication lag the primary reported just before the kill (bytes of WAL not yet replayed by the standby). */
  lagBytes: number | null;
}

interface Snapshot {
  steps: Set<string>;
  finished: Set<string>;
}

const SNAPSHOT_SQL = {
  steps: `SELECT run_id || '#' || seq AS k FROM durable_steps`,
  finished: `SELECT id AS k FROM durable_runs WHERE status IN ('SUCCEEDED','FAILED','CANCELLED')`,
};

async function snapshot(url: string): Promise<Snapshot> {
  const c = new pg.Client({ connectionString: url, connectionTimeoutMillis: 5_000 });
  c.on('error', () => {});
  await c.connect();
  try {
    const keys = async (sql: string) => new Set(((await c.query(sql)).rows as Array<{ k: string }>).map((r) => r.k));
    return { steps: await keys(SNAPSHOT_SQL.steps), finished: await keys(SNAPSHOT_SQL.finished) };
  } finally {
    await c.end().catch(() => {});
  }
}

/**
 * The failover outage of a chaos run: SIGKILL of the primary's postmaster, `promoteAfterMs` of
 * nothing (the time a failover manager takes to decide), promotion of the standby, a snapshot of
 * the new primary, and a comparison with what the old primary had committed when it died (its data
 * folder restarted alone). With synchronous replication nothing committed may be missing; with
 * asynchronous replication the difference is what the failover lost (the engine then re-runs those
 * steps: at-least-once, or, for transactional steps, with their business writes, lost with them).
 */
export class FailoverOutage {
  private facts: FailoverFacts | null = null;
  private inspection: Promise<void> = Promise.resolve();

  constructor(
    private readonly cluster: PgCluster,
    private readonly db: string,
    private readonly replication: 'sync' | 'async',
    private readonly promoteAfterMs: number,
    private readonly log: (line: string) => void,
  ) {}

  async run(): Promise<void> {
    const lagBytes = await this.cluster.replicationLagBytes().catch(() => null);
    const killedAt = await this.cluster.killPrimary();
    this.log(`SIGKILL of the primary's postmaster (port ${this.cluster.primary.port}); promoting the standby in ${this.promoteAfterMs} ms`);
    await delay(Math.max(0, killedAt + this.promoteAfterMs - Date.now()));
    const promotingAt = Date.now();
    await this.cluster.promoteStandby();
    const promotedAt = Date.now();
    this.log(`the standby (port ${this.cluster.standby.port}) is the primary now, ${promotedAt - killedAt} ms after the kill`);
    const after = await snapshot(this.cluster.standby.url(this.db));
    // Aside, while the run goes on: the outage is over for the workers.
    this.inspection = this.cluster.inspectOldPrimary(this.db, snapshot).then((before) => {
      this.facts = {
        replication: this.replication,
        killedAt,
        promotingAt,
        promotedAt,
        lostCheckpoints: [...before.steps].filter((k) => !after.steps.has(k)).length,
        lostRunEnds: [...before.finished].filter((k) => !after.finished.has(k)).length,
        oldCheckpoints: before.steps.size,
        lagBytes,
      };
    });
  }

  /** The facts, once the old primary's data has been read (null if the failover never happened). */
  async result(): Promise<FailoverFacts | null> {
    await this.inspection;
    return this.facts;
  }
}

/** The first run claimed after the kill (every claim after it is on the new primary), from the run history. */
export function firstClaimAfter(facts: ChaosFacts, at: number): number | null {
  let first: number | null = null;
  for (const events of facts.history.values()) {
    for (const e of events) if (e.kind === 'claimed' && e.t >= at && (first === null || e.t < first)) first = e.t;
  }
  return first;
}

/** Runs claimed both before and after the kill: their executions were cut by the failover and went on from their last checkpoint. */
export function runsResumedAfter(facts: ChaosFacts, at: number): number {
  let n = 0;
  for (const events of facts.history.values()) {
    const claims = events.filter((e) => e.kind === 'claimed');
    if (claims.some((e) => e.t < at) && claims.some((e) => e.t >= at)) n++;
  }
  return n;
}

/** Report lines and violations of a failover run. */
export function judgeFailover(
  f: FailoverFacts,
  facts: ChaosFacts,
  leaseMs: number,
  /** Connections of every worker together: commits that can be in flight at once. */
  maxInFlightCommits: number,
): { lines: string[]; violations: string[] } {
  const lines: string[] = [];
  const violations: string[] = [];
  const first = firstClaimAfter(facts, f.promotingAt);
  const s = (ms: number) => `${(ms / 1000).toFixed(2)} s`;
  lines.push(
    `failover (${f.replication} replication): promotion started ${s(f.promotingAt - f.killedAt)} after the primary's SIGKILL and took ${s(f.promotedAt - f.promotingAt)}; ` +
      `first claim on the new primary ${first === null ? 'never' : `${s(first - f.killedAt)} after the kill, ${s(first - f.promotedAt)} after the promotion`}`,
  );
  lines.push(
    `failover: ${runsResumedAfter(facts, f.killedAt)} runs claimed again after it (resumed from their last checkpoint); ` +
      `replication lag just before the kill ${f.lagBytes ?? '?'} bytes`,
  );
  lines.push(
    f.replication === 'sync'
      ? `failover: of ${f.oldCheckpoints} checkpoints the old primary had committed when it died, ${f.lostCheckpoints} (and ${f.lostRunEnds} run ends) were ` +
          `missing on the new primary: commits still waiting for the standby's confirmation at the kill, never acknowledged to a worker, written again there`
      : `failover: of ${f.oldCheckpoints} checkpoints the old primary had committed when it died, ${f.lostCheckpoints} were missing on the new primary at its promotion, ` +
          `and ${f.lostRunEnds} run ends (the engine ran those again from their last surviving checkpoint)`,
  );
  if (first === null) violations.push('failover: no run was claimed on the new primary');
  else if (first! - f.promotedAt > leaseMs + 5_000) {
    violations.push(
      `failover: the first claim on the new primary came ${((first! - f.promotedAt) / 1000).toFixed(2)} s after the promotion (lease ${leaseMs} ms + 5 s allowed)`,
    );
  }
  // With synchronous replication a commit becomes durable on the primary first, then waits for the
  // standby: those waiting at the kill are in the old primary's data, never acknowledged, and may be
  // missing on the new one. There are at most as many as connections that can commit at once.
  if (f.replication === 'sync' && f.lostCheckpoints + f.lostRunEnds > maxInFlightCommits) {
    violations.push(
      `failover with synchronous replication lost more commits than could have been waiting for the standby: ` +
        `${f.lostCheckpoints} checkpoints + ${f.lostRunEnds} run ends > ${maxInFlightCommits} connections`,
    );
  }
  return { lines, violations };
}
