/**
 * Table statistics for a server that runs without autovacuum (this machine's PostgreSQL has
 * `autovacuum = off`). With its defaults a server analyzes a table once more rows changed since the
 * last ANALYZE than 50 + 10 % of its rows, at most once a minute (autovacuum_naptime), and that
 * ANALYZE also makes every prepared statement on the table plan again. Without it, a plan made when a
 * table held a hundred rows is kept while the table grows to tens of thousands: a benchmark phase
 * that starts on a fresh table then measures plans no production server would keep.
 *
 * `keepAnalyzed(url)` analyzes a table of one database whenever it has doubled (grown by more than
 * 50 rows + 100 %) since its last ANALYZE, checked every second, while a peer runs on it: statistics
 * within a factor of two of the table's size, which is what a plan's choices turn on, at a number of
 * ANALYZEs that grows with the logarithm of the growth. Growth only: a drain updates every row twice,
 * and counting updates too (as autovacuum does) re-analyzed a 60,000-row table every second, 15 % of
 * Postgres' CPU in a profile of our drain. Autovacuum's threshold (10 % growth) checked every second
 * is no better: a phase of a few seconds on a table that grows from 20,000 to 60,000 rows (our run
 * history in a 20,000-job drain) got three or four ANALYZEs of ~130 ms each, charged to the peer
 * whose tables grow, where autovacuum's one-minute naptime allows one at most. Every peer's database
 * gets it, so each is measured with statistics, as it would be in production. It does nothing when
 * the server's autovacuum is on. The ANALYZE runs on a backend of the same database, so its CPU
 * counts in the peer's Postgres CPU figures.
 */
import pg from 'pg';

const OVER_THRESHOLD = `
SELECT format('%I.%I', s.schemaname, s.relname) AS name
FROM pg_stat_user_tables s JOIN pg_class c ON c.oid = s.relid
WHERE s.n_live_tup > 50 + 2 * greatest(c.reltuples, 0)`;

interface Analyzer {
  /** ANALYZE statements run so far. */
  readonly analyses: number;
  stop(): Promise<void>;
}

/**
 * Applies the rule to `url`'s database until `stop()`. The database may not exist yet, or be dropped and
 * recreated meanwhile (a peer recreates it at its start): each pass connects when it has no connection
 * and drops it on an error. Nothing runs when the server's autovacuum is on.
 */
function keepAnalyzed(url: string, everyMs = 1000): Analyzer {
  let c: pg.Client | null = null;
  let analyses = 0;
  let stopped = false;
  let serverDoesIt = false;
  let timer: NodeJS.Timeout | undefined;
  let pass: Promise<void> = Promise.resolve();
  const once = async () => {
    if (!c) {
      const fresh = new pg.Client({ connectionString: url, application_name: 'bench-autoanalyze' });
      fresh.on('error', () => {});
      await fresh.connect();
      c = fresh;
      serverDoesIt = (await c.query<{ autovacuum: string }>('SHOW autovacuum')).rows[0].autovacuum === 'on';
    }
    if (serverDoesIt) return;
    const due = await c.query<{ name: string }>(OVER_THRESHOLD);
    for (const t of due.rows) {
      if (stopped) return;
      await c.query(`ANALYZE ${t.name}`);
      analyses++;
    }
  };
  const tick = () => {
    pass = once()
      .catch(async () => {
        // Not there yet, or dropped under it: connect again next time.
        const old = c;
        c = null;
        await old?.end().catch(() => {});
      })
      .then(() => {
        if (!stopped && !serverDoesIt) timer = setTimeout(tick, everyMs);
      });
  };
  tick();
  return {
    get analyses() {
      return analyses;
    },
    async stop() {
      stopped = true;
      clearTimeout(timer);
      await pass;
      await c?.end().catch(() => {});
      c = null;
    },
  };
}

/**
 * Runs `fn` with the rule applied to `url`'s database. `analyses`: how many ANALYZE statements it ran;
 * `note`: the line for the peer's notes (null when nothing was analyzed: the server's autovacuum is on).
 */
export async function withStatistics<T>(url: string, fn: () => Promise<T>): Promise<{ result: T; analyses: number; note: string | null }> {
  const a = keepAnalyzed(url);
  let result: T;
  try {
    result = await fn();
  } finally {
    await a.stop();
  }
  return { result, analyses: a.analyses, note: a.analyses ? analyzerNote(a.analyses) : null };
}

/** The line a peer's notes carry. */
function analyzerNote(analyses: number): string {
  return (
    `statistics: the server runs with autovacuum off, so the bench ran ANALYZE on a table whenever it had doubled ` +
    `(grown by more than 50 rows + 100 %) since its last one, checked every second: ${analyses} times on this peer's database`
  );
}
