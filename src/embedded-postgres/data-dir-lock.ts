import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';

/**
 * PGlite is Postgres in this process: two processes opening the same data folder would
 * corrupt it. A pid file next to the folder keeps a second `npm start` out, with a message;
 * the file of a process that died (even by SIGKILL) is taken over.
 */
export function lockDataDir(dataDir: string): () => void {
  const file = `${dataDir}.pid`;
  mkdirSync(dataDir, { recursive: true });
  for (let i = 0; i < 2; i++) {
    try {
      writeFileSync(file, String(process.pid), { flag: 'wx' });
      return () => {
        try {
          if (readFileSync(file, 'utf8') === String(process.pid)) rmSync(file);
        } catch {
          // already gone
        }
      };
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      const owner = Number(readFileSync(file, 'utf8'));
      if (Number.isInteger(owner) && owner > 0 && owner !== process.pid && isAlive(owner)) {
        throw new Error(
          `The embedded database in ${dataDir} is in use by process ${owner}. Embedded mode serves one process: ` +
            `stop that one, or set DATABASE_URL to a Postgres server to run several.`,
        );
      }
      rmSync(file, { force: true }); // stale: its process is gone
    }
  }
  throw new Error(`could not lock ${dataDir}`);
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}
