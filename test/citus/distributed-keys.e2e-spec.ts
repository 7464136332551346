import { Durable, UnsupportedDatabaseError } from 'nestjs-durable';
import type { DurableEngine } from 'nestjs-durable';
import { debouncedRuns, singletonRuns } from '../../libs/durable/src/store/keyed-runs.js';
import { keyPartition } from '../../libs/durable/src/store/keyed-starts.js';
import { partitionOf, partitionSchema } from '../../libs/durable/src/store/partitions.js';
import { pgSqlClient } from '../../libs/durable/src/store/sql-client.js';
import { createStore, type Store } from '../../libs/durable/src/store/store.js';
import { CitusCluster, countRuns, describeCitus } from '../support/citus-cluster.js';
import { EngineHarness, eventually } from '../support/engine-harness.js';

const PARTITIONS = 6;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

interface KeyedRow {
  id: string;
  status: string;
  part: number;
  input: unknown;
  started_at: Date | null;
}

/** Singleton starts (dedupeKey) and debounce in distributed mode: a keyed run lives in its key's partition. */
describeCitus('distributed mode on Citus: singleton starts and debounce', () => {
  let cluster: CitusCluster;
  let h: EngineHarness;
  let engines: DurableEngine[];
  let store: Store;
  const release = new Map<string, () => void>();
  const workflows = {
    sync: async (i: { key: string }) => {
      await new Promise<void>((r) => release.set(i.key, r));
      return i.key;
    },
    reindex: async (i: { v: number }) => Durable.step('index', async () => i.v),
  };

  /** The runs of a workflow with a dedupe or debounce key, from every partition (with the partition each was found in). */
  const keyed = (column: 'dedupe_key' | 'debounce_key', key: string): Promise<KeyedRow[]> => {
    const each = Array.from(
      { length: PARTITIONS },
      (_, k) => `SELECT id, status, ${k} AS part, input, started_at FROM ${partitionSchema(k)}.durable_runs WHERE ${column} = $1`,
    );
    return h.query<KeyedRow>(`${each.join(' UNION ALL ')} ORDER BY id`, [key]);
  };

  beforeAll(async () => {
    cluster = await CitusCluster.start();
    const db = await cluster.database('durable_citus_keys', PARTITIONS);
    h = EngineHarness.on(db);
    engines = [await h.engine(workflows), await h.engine(workflows)];
    store = createStore(pgSqlClient(h.pool, { prepared: false }), { history: true, layout: { partitions: PARTITIONS } });
  }, 120_000);
  afterAll(async () => {
    for (const r of release.values()) r();
    await h?.close();
    await cluster?.stop();
  });

  it('two engines starting the same dedupeKeys at once: one active run per key, in its key partition; after it ends, a new one', async () => {
    const keys = Array.from({ length: 6 }, (_, n) => `account-${n}`);
    expect(new Set(keys.map((k) => keyPartition('sync', k, PARTITIONS))).size).toBeGreaterThan(1);
    const starts = await Promise.all(
      keys.flatMap((key) =>
        Array.from({ length: 8 }, (_, n) => engines[n % 2].startRun('sync', { key }, { dedupeKey: key }).then((run) => ({ key, run }))),
      ),
    );
    const parts = new Set<number>();
    for (const key of keys) {
      const mine = starts.filter((s) => s.key === key).map((s) => s.run);
      const started = mine.filter((r) => r.outcome === 'started');
      expect(started).toHaveLength(1);
      for (const r of mine)
        expect({ id: r.id, outcome: r.outcome }).toEqual({ id: started[0].id, outcome: r === started[0] ? 'started' : 'deduplicated' });
      const rows = await keyed('dedupe_key', key);
      expect(rows.map((r) => r.id)).toEqual([started[0].id]);
      expect(rows[0].part).toBe(partitionOf(started[0].id, PARTITIONS));
      expect(rows[0].part).toBe(keyPartition('sync', key, PARTITIONS));
      parts.add(rows[0].part);
    }
    expect(parts.size).toBeGreaterThan(1);
    // the admin list reads every partition: the six active singletons, newest first
    const listed = await singletonRuns(store, 50);
    expect(listed.map((s) => s.key).sort()).toEqual(keys);
    expect(listed.map((s) => s.createdAt)).toEqual(
      listed
        .map((s) => s.createdAt)
        .sort()
        .reverse(),
    );
    const top = await singletonRuns(store, 2);
    expect(top).toHaveLength(2);
    for (const s of top) expect(s.createdAt >= listed[2].createdAt).toBe(true);
    // inside the caller's transaction too
    const first = starts.find((s) => s.key === 'account-0' && s.run.outcome === 'started')!.run;
    const inTx = await h.prisma.$transaction((tx: any) =>
      engines[1].startRun('sync', { key: 'account-0' }, { tx, dedupeKey: 'account-0' }),
    );
    expect(inTx).toMatchObject({ id: first.id, outcome: 'deduplicated' });

    await eventually(async () => release.has('account-0'), 20_000);
    release.get('account-0')!();
    await first.result({ timeoutMs: 20_000 });
    const next = await engines[1].startRun('sync', { key: 'account-0' }, { dedupeKey: 'account-0' });
    expect(next.outcome).toBe('started');
    expect(next.id).not.toBe(first.id);
    const home = keyPartition('sync', 'account-0', PARTITIONS);
    expect((await keyed('dedupe_key', 'account-0')).map((r) => r.part)).toEqual([home, home]);
  }, 60_000);

  it('an id of the caller own: in the key partition it is kept (and idempotent), elsewhere refused with nothing written', async () => {
    const home = keyPartition('sync', 'own-ids', PARTITIONS);
    const ids = Array.from({ length: 100 }, (_, n) => `order-${n}`);
    const here = ids.find((id) => partitionOf(id, PARTITIONS) === home)!;
    const away = ids.find((id) => partitionOf(id, PARTITIONS) !== home)!;
    const err = await engines[0].startRun('sync', { key: 'own-ids' }, { id: away, dedupeKey: 'own-ids' }).catch((x: unknown) => x);
    expect(err).toBeInstanceOf(UnsupportedDatabaseError);
    expect(err).toMatchObject({ code: 'UNSUPPORTED_DATABASE', feature: 'dedupeKey' });
    expect((err as Error).message).toMatch(/leave the id to the engine/);
    expect(await h.query(countRuns(PARTITIONS, `id = '${away}' OR dedupe_key = 'own-ids'`))).toEqual([{ n: 0 }]);
    const mine = await engines[0].startRun('sync', { key: 'own-ids' }, { id: here, dedupeKey: 'own-ids' });
    expect({ id: mine.id, outcome: mine.outcome }).toEqual({ id: here, outcome: 'started' });
    const again = await engines[1].startRun('sync', { key: 'own-ids' }, { id: here, dedupeKey: 'own-ids' });
    expect({ id: again.id, outcome: again.outcome }).toEqual({ id: here, outcome: 'existing' });
    expect((await engines[1].startRun('sync', { key: 'own-ids' }, { dedupeKey: 'own-ids' })).id).toBe(here);
  });

  it('debounce: starts from two engines within the period make one run in its key partition, with the last input, after the period', async () => {
    // A period long enough that the burst, the read of the debounced runs and the last start all fall
    // inside it on a loaded machine (each a few Citus round trips).
    const d = { key: 'doc-7', periodMs: 5_000 };
    const burst = await Promise.all(Array.from({ length: 8 }, (_, n) => engines[n % 2].startRun('reindex', { v: n }, { debounce: d })));
    const first = burst.find((r) => r.outcome === 'started')!;
    expect(burst.filter((r) => r.outcome === 'started')).toHaveLength(1);
    for (const r of burst) expect(r.id).toBe(first.id);
    const pending = await debouncedRuns(store, 10);
    expect(pending).toEqual([expect.objectContaining({ key: 'doc-7', runId: first.id })]);
    await sleep(300);
    const lastAt = Date.now();
    const last = await engines[1].startRun('reindex', { v: 99 }, { debounce: d });
    expect({ id: last.id, outcome: last.outcome }).toEqual({ id: first.id, outcome: 'debounced' });
    expect(await first.result({ timeoutMs: 20_000 })).toBe(99);
    const [row] = await keyed('debounce_key', 'doc-7');
    expect(row).toMatchObject({ id: first.id, status: 'SUCCEEDED', input: { v: 99 }, part: keyPartition('reindex', 'doc-7', PARTITIONS) });
    expect(row.part).toBe(partitionOf(first.id, PARTITIONS));
    expect(row.started_at!.getTime() - lastAt).toBeGreaterThanOrEqual(d.periodMs - 50);
    // once it started, the next start makes a new run
    const later = await engines[0].startRun('reindex', { v: 5 }, { debounce: { key: 'doc-7', periodMs: 100 } });
    expect(later.outcome).toBe('started');
    expect(await later.result({ timeoutMs: 20_000 })).toBe(5);
    expect(await debouncedRuns(store, 10)).toEqual([]);
  }, 40_000);
});
