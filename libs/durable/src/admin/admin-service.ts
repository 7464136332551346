import { BackfillsAdmin } from './backfills-admin.js';
import { StreamsAdmin } from './streams-admin.js';
import { SignalsAdmin } from './signals-admin.js';
import type { DurableEngine } from '../engine/durable-engine.js';
import type { SqlClient } from '../store/sql-client.js';
import { AdminContext } from './admin-context.js';
import { BulkAdmin } from './bulk-admin.js';
import { BulkTokens } from './bulk-token.js';
import { FlowAdmin } from './flow-admin.js';
import { InsightsAdmin } from './insights-admin.js';
import { LiveFeed } from './live-feed.js';
import { ReadReplica } from './read-replica.js';
import { RunsAdmin } from './runs-admin.js';
import { SchedulesAdmin } from './schedules-admin.js';

export interface AdminServiceOptions {
  /** Key of the bulk tokens' HMAC; default: a random key made now (tokens then live in this process only). */
  bulkTokenSecret?: string;
  /** A read replica's URL: lists, counts, statistics and charts are read there (see ReadReplica). */
  readReplicaUrl?: string;
  /** Where the module mounts the signals' endpoints (its `signalPath`). */
  signalPath?: string;
  /** The admin API's path (`admin.path`). */
  adminPath?: string;
}

/**
 * What the admin API does, on top of the engine: no HTTP here (nest/admin serves it), no Prisma
 * models. One part per thing it serves (runs, bulk actions, schedules, flow control, insights, the
 * live feed); reads go through the engine's store, optionally limited (`limit` wraps its
 * connection, e.g. at most a few admin statements at a time); cancel, resume and fork are the
 * engine's own. The flat methods below are the ones the CLI and the benchmarks call.
 */
export class AdminService {
  readonly runs: RunsAdmin;
  readonly bulk: BulkAdmin;
  readonly schedules: SchedulesAdmin;
  readonly flow: FlowAdmin;
  readonly backfills: BackfillsAdmin;
  readonly streams: StreamsAdmin;
  readonly signals: SignalsAdmin;
  readonly insights: InsightsAdmin;
  /** The live feed every live connection of this admin API shares (one statement per interval in all). */
  readonly live: LiveFeed;
  /** The read replica, when one is configured. */
  readonly replica: ReadReplica | null;

  constructor(engineRef: () => DurableEngine, limit?: (sql: SqlClient) => SqlClient, options: AdminServiceOptions = {}) {
    const replica = options.readReplicaUrl ? new ReadReplica(options.readReplicaUrl, () => engineRef().options.logger) : null;
    const c = new AdminContext(engineRef, limit, replica);
    this.replica = replica;
    this.runs = new RunsAdmin(c);
    this.bulk = new BulkAdmin(c, new BulkTokens(options.bulkTokenSecret));
    this.schedules = new SchedulesAdmin(c);
    this.flow = new FlowAdmin(c);
    this.backfills = new BackfillsAdmin(c);
    this.streams = new StreamsAdmin(c);
    this.signals = new SignalsAdmin(
      c,
      () => options.signalPath ?? 'durable/signals',
      () => options.adminPath ?? 'durable',
    );
    this.insights = new InsightsAdmin(c);
    this.live = new LiveFeed(
      () => c.store,
      () => this.insights.stats(60),
    );
  }

  /** Closes the read replica's connections (the engine's are the engine's). Nest calls it at shutdown. */
  async close(): Promise<void> {
    await this.replica?.close();
  }
  onApplicationShutdown(): Promise<void> {
    return this.close();
  }

  listRuns: RunsAdmin['list'] = (q) => this.runs.list(q);
  getRun: RunsAdmin['get'] = (id) => this.runs.get(id);
  exportRun: RunsAdmin['export'] = (id) => this.runs.export(id);
  cancel: RunsAdmin['cancel'] = (id, opts, actor) => this.runs.cancel(id, opts, actor);
  resume: RunsAdmin['resume'] = (id, actor) => this.runs.resume(id, actor);
  bulkPreview: BulkAdmin['preview'] = (p) => this.bulk.preview(p);
  bulkExecute: BulkAdmin['execute'] = (token, batchSize, actor, action) => this.bulk.execute(token, batchSize, actor, action);
  stats: InsightsAdmin['stats'] = (windowMinutes) => this.insights.stats(windowMinutes);
  charts: InsightsAdmin['charts'] = (range) => this.insights.charts(range);
  versions: InsightsAdmin['versions'] = () => this.insights.versions();
}
