/** The queue drain-costs and drain-parts drain: 1-step runs started in bulk, and the parameters of their ends. */
import pg from 'pg';
import { recreateDatabase } from './db.js';
import { enqueueBulk } from './peers/ours.js';
import { createSchema, OursHost } from './peers/ours-lib.js';

/** A fresh database at `url` with `runs` 1-step runs started (startMany, history on); resolves to a connection to it. */
export async function filledQueue(url: string, runs: number): Promise<pg.Client> {
  await recreateDatabase(url);
  await createSchema(url);
  const host = new OursHost({ url, steps: 1, concurrency: 10, dbWrite: false, worker: false, history: true, poolSize: 4 });
  await host.start();
  await enqueueBulk(host, 'r', runs, '');
  await host.stop();
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  return c;
}

/**
 * The parameters of FINISH_PLAIN_RUNS and FINISH_RUNS (both take the same) ending the claimed `rows`
 * SUCCEEDED, each with its step's checkpoint: the ends ($1..$5), the checkpoints ($6..$16), history
 * ($17), the rows to lock ($18), not kept ($19).
 */
export function endValues(rows: Array<{ id: string; lease_epoch: number }>, history: boolean, notKept: boolean): unknown[] {
  const ids = rows.map((r) => r.id);
  const epochs = rows.map((r) => r.lease_epoch);
  const all = <T>(v: T) => rows.map(() => v);
  return [
    ...[ids, epochs, all('SUCCEEDED'), all('0'), all(null)],
    ...[ids, epochs, all(0), all('benchStep'), all('SUCCEEDED'), all('0'), all(null), all(1), all(0.1), all(null), all(null)],
    history,
    ids,
    all(notKept),
  ];
}
