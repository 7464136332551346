import { readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { LIBRARY_SRC, librarySources } from './library-sources.js';

/**
 * node-postgres emits 'error' on a client whose connection dies (a restart, a failover), and an
 * 'error' event with no listener kills the process. Every file of the library that makes a pg
 * client or pool must therefore also attach a listener ('error'), or make it with the guarded
 * Client class (store/guarded-client.ts) whose pools get theirs in store/pool.ts.
 */
const SRC = LIBRARY_SRC;

describe('pg connections the library makes', () => {
  it('every file that makes a pg client or pool listens for its errors', () => {
    const makers = [...librarySources()].filter((f) => /new (pg\.)?(Client|Pool)\(|new config\.Client\(/.test(readFileSync(f, 'utf8')));
    expect(makers.length).toBeGreaterThan(5);
    const unguarded = makers.filter((f) => !/\.on\('error'/.test(readFileSync(f, 'utf8')));
    expect(unguarded.map((f) => relative(SRC, f))).toEqual([]);
  });

  it('the pools get an idle-error listener where they are made for the engine and the app', () => {
    const pool = readFileSync(join(SRC, 'store', 'pool.ts'), 'utf8');
    expect(pool.match(/logIdleErrors\(pool, /g)?.length).toBe(2); // createPool and createPostgresPool
  });
});
