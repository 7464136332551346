/** Runs waiting for a signal (Durable.waitForSignal), for the admin API and the dashboard. */
import { statement } from './statement.js';
import { eachPartition, type Store } from './store.js';

/** The topic prefix of signals inside recv step names: `durable.recv:durable.signal:<name>`. */
const SIGNAL_STEP_PREFIX = 'durable.recv:durable.signal:';

/**
 * The newest WAITING runs (`limit` at most, durable_runs_status_created_idx) with the signal each is
 * suspended on: its recv step recorded as WAITING (durable_steps_pkey, by run). `limit` is the
 * dialect's placeholder.
 */
const signalWaitsSql = (limit: string) => `
SELECT r.id AS run_id, r.workflow_name, r.created_at, s.name AS step, s.started_at AS since
FROM (SELECT id, workflow_name, created_at FROM durable_runs WHERE status = 'WAITING' ORDER BY created_at DESC LIMIT ${limit}) r
JOIN durable_steps s ON s.run_id = r.id AND s.status = 'WAITING' AND s.name LIKE '${SIGNAL_STEP_PREFIX}%'
ORDER BY r.created_at DESC`;
const SIGNAL_WAITS = statement('signal_waits', signalWaitsSql('$1'));
const SIGNAL_WAITS_MYSQL = signalWaitsSql('?');

export interface SignalWait {
  runId: string;
  workflowName: string;
  signal: string;
  /** When the wait began. */
  since: Date | null;
}

/** Runs suspended waiting for a signal, among the newest `scan` WAITING runs. */
export async function signalWaits(store: Store, scan: number): Promise<SignalWait[]> {
  const rows =
    store.sql.dialect === 'mysql'
      ? await store.sql.query<Row>(SIGNAL_WAITS_MYSQL, [scan])
      : (await eachPartition(store, (p) => p.sql.query<Row>(SIGNAL_WAITS, [scan]))).flat();
  return rows.map((r) => ({
    runId: r.run_id,
    workflowName: r.workflow_name,
    signal: r.step.slice(SIGNAL_STEP_PREFIX.length),
    since: r.since == null ? null : r.since instanceof Date ? r.since : new Date(`${String(r.since).replace(' ', 'T')}Z`),
  }));
}

interface Row {
  run_id: string;
  workflow_name: string;
  step: string;
  since: Date | string | null;
}
