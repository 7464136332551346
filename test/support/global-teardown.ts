// Jest loads this file on its own (CommonJS, no module mapping): keep it free of relative imports.
import pg from 'pg';

/**
 * Stops this run's embedded server and removes its folder (global-setup left the function
 * here); on any other server, drops this run's template database and test databases left
 * behind by killed runs.
 */
export default async function globalTeardown(): Promise<void> {
  const stopEmbedded = (globalThis as { stopDurableTestServer?: () => void }).stopDurableTestServer;
  if (stopEmbedded) return stopEmbedded();
  const c = new pg.Client({ connectionString: `${process.env.TEST_PG_URL ?? 'postgresql://postgres@127.0.0.1:5432'}/postgres` });
  await c.connect();
  try {
    const { rows } = await c.query<{ datname: string }>(`SELECT datname FROM pg_database WHERE datname LIKE 'durable\\_test\\_%'`);
    for (const { datname } of rows) {
      const pid = Number(/_(\d+)(?:_\d+)?$/.exec(datname)?.[1] ?? /tpl_(\d+)$/.exec(datname)?.[1] ?? NaN);
      const mine = datname === process.env.DURABLE_TEST_TEMPLATE;
      if (mine || (Number.isInteger(pid) && !alive(pid))) await c.query(`DROP DATABASE IF EXISTS "${datname}" WITH (FORCE)`);
    }
  } finally {
    await c.end();
  }
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}
