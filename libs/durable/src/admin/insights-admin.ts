import { charts, type ChartRange } from '../store/admin-charts.js';
import { stats } from '../store/admin-stats.js';
import { versionsInFlight } from '../store/admin-versions.js';
import type { AdminContext } from './admin-context.js';
import { assembleStats } from './stats.js';
import { assembleVersions } from './versions.js';

/** What the cluster is doing and what this instance runs: stats, charts, versions, hook consumers, workflows. */
export class InsightsAdmin {
  constructor(private readonly c: AdminContext) {}

  /** Runs started, and finished by status, per bucket over the range (1h: 1-minute, 24h: 30-minute, 7d: 3-hour buckets). */
  async charts(range: ChartRange) {
    return charts(this.c.readStore, range);
  }

  /**
   * With a read replica, its lag too (`readReplica`): the figures are as old as that. `database`: the
   * dialect, and how a run started by another instance reaches this one's workers (PostgreSQL:
   * LISTEN/NOTIFY, at once; MariaDB: the next poll, every pollIntervalMs).
   */
  async stats(windowMinutes: number) {
    const replica = this.c.replica;
    const [rows, lag] = await Promise.all([stats(this.c.readStore, windowMinutes), replica ? replica.lag() : null]);
    const dialect = this.c.engine.storeForTools.sql.dialect;
    const database =
      dialect === 'mysql'
        ? { dialect, wakeUps: 'polling' as const, pollIntervalMs: this.c.engine.options.pollIntervalMs }
        : { dialect, wakeUps: 'listen-notify' as const, pollIntervalMs: this.c.engine.options.pollIntervalMs };
    return { ...assembleStats(rows, windowMinutes), database, ...(lag && { readReplica: lag }) };
  }

  /** App versions with runs in flight (to see when an old build has drained), and this instance's version and claim filter. */
  async versions() {
    return assembleVersions(await versionsInFlight(this.c.readStore), this.c.engine.options);
  }

  /** Lifecycle-hook consumers: where each is in the run history, who delivers to it, how far behind it is. */
  async hooks() {
    const rows = await this.c.engine.hookCursors();
    return {
      consumers: rows.map((c) => ({
        ...c,
        leaseExpiresAt: c.leaseExpiresAt?.toISOString() ?? null,
        updatedAt: c.updatedAt.toISOString(),
      })),
    };
  }

  /** The workflows registered in this instance with their options, and the queues they use or the options name. */
  workflows() {
    const { concurrency, queues } = this.c.engine.options;
    const concurrencyOf = (q: string) => queues[q]?.concurrency ?? concurrency;
    const workflows = this.c.engine.registry
      .all()
      .map((d) => ({
        name: d.name,
        queue: d.queue,
        queueConcurrency: concurrencyOf(d.queue),
        className: d.className ?? null,
        methodName: d.methodName ?? null,
        options: jsonSafe(d.options),
      }))
      .sort((a, b) => a.name.localeCompare(b.name));
    const queueNames = [...new Set([...workflows.map((w) => w.queue), ...Object.keys(queues)])].sort();
    return { workflows, queues: queueNames.map((name) => ({ name, concurrency: concurrencyOf(name) })) };
  }
}

/** Decorator options as JSON (functions dropped, bigint as text), never a serialization crash. */
function jsonSafe(v: unknown): unknown {
  try {
    return JSON.parse(JSON.stringify(v ?? {}, (_k, x) => (typeof x === 'bigint' ? x.toString() : x)));
  } catch {
    return {};
  }
}
