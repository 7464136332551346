import type pg from 'pg';
import {
  CANCEL_CHANNEL,
  COMPENSATE_CHANNEL,
  FLOW_LIMITS_CHANNEL,
  SIGNAL_CHANNEL,
  STREAM_CHANNEL,
  WAKEUP_CHANNEL,
} from './sql-fragments.js';

/** The channels the engine's LISTEN session listens on. */
export const LISTEN_CHANNELS = {
  wakeup: WAKEUP_CHANNEL,
  cancel: CANCEL_CHANNEL,
  signal: SIGNAL_CHANNEL,
  compensate: COMPENSATE_CHANNEL,
  flowLimits: FLOW_LIMITS_CHANNEL,
  stream: STREAM_CHANNEL,
} as const;

/** Is the session's server the primary, and does the session listen on every channel? One round trip. */
const LISTEN_CHECK_SQL = `SELECT pg_is_in_recovery() AS standby, ARRAY(SELECT pg_listening_channels()) AS channels`;

/** What is wrong with a LISTEN session (null: nothing): it is on a standby, or misses channels. */
export async function checkListening(client: pg.Client): Promise<string | null> {
  const { rows } = await client.query<{ standby: boolean; channels: string[] }>(LISTEN_CHECK_SQL);
  const { standby, channels } = rows[0] ?? { standby: false, channels: [] };
  if (standby) return 'the LISTEN session is on a standby now (no notifications are sent there)';
  const missing = Object.values(LISTEN_CHANNELS).filter((c) => !channels.includes(c));
  return missing.length ? `the LISTEN session no longer listens on ${missing.join(', ')}` : null;
}
