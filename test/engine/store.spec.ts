import { claim, leaseHeartbeat, sweepExpiredLeases } from '../../libs/durable/src/store/leases.js';
import { finishRuns, insertStep, insertSteps } from '../../libs/durable/src/store/checkpoints.js';
import { sweepDeadlines, sweepRetention } from '../../libs/durable/src/store/maintenance.js';
import { cancelTree } from '../../libs/durable/src/store/control.js';
import { pgSqlClient } from '../../libs/durable/src/store/sql-client.js';
import { createStore, type Store } from '../../libs/durable/src/store/store.js';
import { engineStatements } from '../../libs/durable/src/store/statement.js';
import type { RunEnd, StepCheckpoint } from '../../libs/durable/src/store/rows.js';
import { EngineHarness, sleep } from '../support/engine-harness.js';

/** The store's statements against real Postgres: claim, fencing, heartbeat, sweeper. */
describe('store: claim, fencing, sweeper', () => {
  let h: EngineHarness;
  let sql: Store;
  beforeAll(async () => {
    h = await EngineHarness.create('store');
    sql = createStore(pgSqlClient(h.pool, { prepared: false }), { history: true });
  });
  afterAll(() => h.close());
  beforeEach(() => h.query('TRUNCATE durable_runs CASCADE'));

  /** A step `s` of run `runId` that succeeded with output 1, as an execution checkpoints it. */
  const checkpoint = (runId: string, epoch: number, seq: number): StepCheckpoint => ({
    runId,
    epoch,
    seq,
    name: 's',
    status: 'SUCCEEDED',
    output: '1',
    error: null,
    attempts: 1,
    durationMs: 1,
  });

  const insert = (n: number, extra: string = '') =>
    h.query(
      `INSERT INTO durable_runs (id, workflow_name, queue, input ${extra ? ', priority, available_at' : ''})
             SELECT 'r' || i, 'wf', 'q', '{}'::jsonb ${extra} FROM generate_series(1, $1) i`,
      [n],
    );

  it('claims disjoint batches under concurrency, one statement each', async () => {
    await insert(100);
    const [a, b, c] = await Promise.all([
      claim(sql, { queue: 'q', limit: 60, owner: 'A', leaseMs: 10_000, workflows: ['wf'] }),
      claim(sql, { queue: 'q', limit: 60, owner: 'B', leaseMs: 10_000, workflows: ['wf'] }),
      claim(sql, { queue: 'q', limit: 60, owner: 'C', leaseMs: 10_000, workflows: ['wf'] }),
    ]);
    const ids = [...a, ...b, ...c].map((r) => r.id);
    expect(ids).toHaveLength(100);
    expect(new Set(ids).size).toBe(100);
    expect(a.every((r) => r.epoch === 1 && r.attempt === 1 && r.steps.length === 0)).toBe(true);
    expect(await claim(sql, { queue: 'q', limit: 10, owner: 'D', leaseMs: 10_000, workflows: ['wf'] })).toEqual([]);
  });

  it('claims by priority then age, never before available_at, only its queue', async () => {
    await h.query(`INSERT INTO durable_runs (id, workflow_name, queue, priority, available_at) VALUES
      ('late', 'wf', 'q', 0, now() + interval '1 hour'), ('low', 'wf', 'q', 5, now() - interval '1 minute'),
      ('high-new', 'wf', 'q', 0, now() - interval '1 second'), ('high-old', 'wf', 'q', 0, now() - interval '2 seconds'),
      ('other', 'wf', 'other-q', 0, now())`);
    const ids = async (limit: number) =>
      (await claim(sql, { queue: 'q', limit, owner: 'A', leaseMs: 10_000, workflows: ['wf'] })).map((r) => r.id).sort();
    expect(await ids(1)).toEqual(['high-old']);
    expect(await ids(1)).toEqual(['high-new']);
    expect(await ids(10)).toEqual(['low']);
  });

  it('claims only workflows the worker has code for', async () => {
    await h.query(`INSERT INTO durable_runs (id, workflow_name, queue) VALUES ('known', 'wf', 'q'), ('newer', 'wf-v2', 'q')`);
    expect(
      (await claim(sql, { queue: 'q', limit: 10, owner: 'old-instance', leaseMs: 10_000, workflows: ['wf'] })).map((r) => r.id),
    ).toEqual(['known']);
  });

  it('claims only runs of the versions given (runVersions), and runs recorded without a version', async () => {
    await h.query(`INSERT INTO durable_runs (id, workflow_name, queue, app_version) VALUES
      ('v1', 'wf', 'vq', '1'), ('v2', 'wf', 'vq', '2'), ('v3', 'wf', 'vq', '3'), ('none', 'wf', 'vq', NULL)`);
    expect(
      (await claim(sql, { queue: 'vq', limit: 10, owner: 'A', leaseMs: 10_000, workflows: ['wf'], versions: ['2', '3'] }))
        .map((r) => r.id)
        .sort(),
    ).toEqual(['none', 'v2', 'v3']);
    expect((await claim(sql, { queue: 'vq', limit: 10, owner: 'A', leaseMs: 10_000, workflows: ['wf'] })).map((r) => r.id)).toEqual(['v1']);
  });

  it.each([
    ['durable_claim', []],
    ['durable_claim_versions', ["ARRAY['1']"]],
  ])('%s uses the partial claim indexes, and sleeping runs cost an empty claim nothing', async (name, extra) => {
    await h.query(`INSERT INTO durable_runs (id, workflow_name, queue, status, available_at)
                   SELECT 'sleeping-' || i, 'wf', 'q', 'WAITING', now() + interval '1 hour' FROM generate_series(1, 20000) i
                   ON CONFLICT DO NOTHING`);
    await h.query('ANALYZE durable_runs');
    const params = ["'q'", '10', "'A'", '1000', "ARRAY['wf']", 'false', ...extra];
    const plan = await h.query(
      `EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) ${engineStatements()
        .get(name)!
        .replace(/\$(\d)/g, (_, n) => params[Number(n) - 1])}`,
    );
    const text = JSON.stringify(plan);
    expect(text).toContain('durable_runs_claim_idx');
    expect(text).toContain('durable_runs_wake_idx');
    // A node's buffer counts include its children's (EXPLAIN reports them inclusive): the root's are the statement's.
    const root = plan[0]['QUERY PLAN'][0].Plan;
    const buffers = (root['Shared Hit Blocks'] ?? 0) + (root['Shared Read Blocks'] ?? 0);
    expect(buffers).toBeLessThan(50); // the 20,000 sleeping runs are not scanned (they would take hundreds of blocks)
  });

  it('fences every write of a worker whose lease moved on (zombie)', async () => {
    await insert(1);
    const [mine] = await claim(sql, { queue: 'q', limit: 1, owner: 'A', leaseMs: 100, workflows: ['wf'] });
    const step = { runId: mine.id, seq: 0, name: 's', status: 'SUCCEEDED' as const, output: '1', error: null, attempts: 1, durationMs: 1 };
    expect(await insertStep(sql, { ...step, epoch: mine.epoch })).toBe(true);
    await sleep(150); // lease expires; another instance sweeps and claims
    expect(await sweepExpiredLeases(sql, 10)).toBe(1);
    const [theirs] = await claim(sql, { queue: 'q', limit: 1, owner: 'B', leaseMs: 10_000, workflows: ['wf'] });
    expect(theirs.epoch).toBe(mine.epoch + 1);
    expect(theirs.steps.map((s) => s.seq)).toEqual([0]);
    // The zombie A: heartbeat, checkpoint and completion all match nothing.
    expect((await leaseHeartbeat(sql, [{ id: mine.id, epoch: mine.epoch }], 10_000)).size).toBe(0);
    expect(await insertStep(sql, { ...step, seq: 1, epoch: mine.epoch })).toBe(false);
    const end = (epoch: number, output: string) =>
      finishRuns(sql, [{ runId: mine.id, epoch, status: 'SUCCEEDED', output, error: null, parentId: null }]);
    expect((await end(mine.epoch, '"zombie"')).size).toBe(0);
    // The owner B writes normally.
    expect(await insertStep(sql, { ...step, seq: 1, epoch: theirs.epoch })).toBe(true);
    expect((await end(theirs.epoch, '"owner"')).size).toBe(1);
    const [row] = await h.query(`SELECT status, output, lease_owner FROM durable_runs WHERE id = $1`, [mine.id]);
    expect(row).toEqual({ status: 'SUCCEEDED', output: 'owner', lease_owner: null });
  });

  it('batched checkpoints and run ends are fenced per run, in one statement each', async () => {
    await insert(4);
    const runs = await claim(sql, { queue: 'q', limit: 4, owner: 'A', leaseMs: 10_000, workflows: ['wf'] });
    await cancelTree(sql, runs[3].id, true, null); // its lease is gone
    const step = (r: (typeof runs)[number], seq: number, epoch = r.epoch) => ({
      runId: r.id,
      epoch,
      seq,
      name: 's',
      status: 'SUCCEEDED' as const,
      output: `${seq}`,
      error: null,
      attempts: 1,
      durationMs: 2,
    });
    const written = await insertSteps(sql, [step(runs[0], 0), step(runs[0], 1), step(runs[1], 0), step(runs[2], 0, 99), step(runs[3], 0)]);
    expect([...written].sort()).toEqual([`${runs[0].id}:0`, `${runs[0].id}:1`, `${runs[1].id}:0`].sort());
    const ended = await finishRuns(sql, [
      { runId: runs[0].id, epoch: runs[0].epoch, status: 'SUCCEEDED', output: '"a"', error: null, parentId: null },
      { runId: runs[1].id, epoch: runs[1].epoch, status: 'FAILED', output: null, error: '{"message":"x"}', parentId: null },
      { runId: runs[2].id, epoch: 99, status: 'SUCCEEDED', output: '"zombie"', error: null, parentId: null },
    ]);
    expect([...ended.keys()].sort()).toEqual([runs[0].id, runs[1].id].sort());
    const rows = await h.query(`SELECT id, status, output FROM durable_runs ORDER BY id`);
    expect(rows.map((r) => r.status)).toEqual(['SUCCEEDED', 'FAILED', 'RUNNING', 'CANCELLED']);
  });

  it('batched checkpoints, heartbeats and run ends of many runs never deadlock each other', async () => {
    await insert(200);
    const runs = await claim(sql, { queue: 'q', limit: 200, owner: 'A', leaseMs: 60_000, workflows: ['wf'] });
    const shuffled = () => [...runs].sort(() => Math.random() - 0.5);
    const work: Promise<unknown>[] = [];
    for (let i = 0; i < 20; i++) {
      work.push(
        insertSteps(
          sql,
          shuffled()
            .slice(0, 50)
            .map((r) => checkpoint(r.id, r.epoch, i)),
        ),
      );
      work.push(
        leaseHeartbeat(
          sql,
          shuffled().map((r) => ({ id: r.id, epoch: r.epoch })),
          60_000,
        ),
      );
    }
    await Promise.all(work); // a deadlock would reject one of them
    const ended = await finishRuns(
      sql,
      shuffled().map((r) => ({ runId: r.id, epoch: r.epoch, status: 'SUCCEEDED' as const, output: '1', error: null, parentId: null })),
    );
    expect(ended.size).toBe(200);
  });

  it('heartbeat extends only the leases still held, in one statement', async () => {
    await insert(3);
    const runs = await claim(sql, { queue: 'q', limit: 3, owner: 'A', leaseMs: 10_000, workflows: ['wf'] });
    await cancelTree(sql, runs[0].id, true, null);
    const kept = await leaseHeartbeat(
      sql,
      runs.map((r) => ({ id: r.id, epoch: r.epoch })),
      60_000,
    );
    expect([...kept.keys()].sort()).toEqual([runs[1].id, runs[2].id].sort());
    const rows = await h.query(`SELECT count(*)::int AS n FROM durable_runs WHERE lease_expires_at > now() + interval '50 seconds'`);
    expect(rows[0].n).toBe(2);
  });

  it('heartbeat does not renew a lease that has expired (the worker counts it lost already)', async () => {
    await insert(2);
    const runs = await claim(sql, { queue: 'q', limit: 2, owner: 'A', leaseMs: 60_000, workflows: ['wf'] });
    await h.query(`UPDATE durable_runs SET lease_expires_at = now() - interval '1 second' WHERE id = $1`, [runs[0].id]);
    const kept = await leaseHeartbeat(
      sql,
      runs.map((r) => ({ id: r.id, epoch: r.epoch })),
      60_000,
    );
    expect([...kept.keys()]).toEqual([runs[1].id]);
    const [row] = await h.query(`SELECT lease_expires_at < now() AS expired FROM durable_runs WHERE id = $1`, [runs[0].id]);
    expect(row.expired).toBe(true);
    expect(await sweepExpiredLeases(sql, 10)).toBe(1);
  });

  it('sweeps expired leases in bounded batches, safely from several instances at once', async () => {
    await insert(1200);
    await claim(sql, { queue: 'q', limit: 1200, owner: 'dead', leaseMs: 1, workflows: ['wf'] });
    await sleep(20);
    const results = await Promise.all(
      [0, 1, 2].map(async () => {
        let total = 0;
        for (;;) {
          const n = await sweepExpiredLeases(sql, 250);
          expect(n).toBeLessThanOrEqual(250);
          total += n;
          if (n === 0) return total;
        }
      }),
    );
    expect(results.reduce((a, b) => a + b, 0)).toBe(1200);
    const [row] = await h.query(`SELECT count(*)::int AS n FROM durable_runs WHERE status = 'PENDING' AND lease_owner IS NULL`);
    expect(row.n).toBe(1200);
  });

  it('fails runs past their deadline, and deletes finished runs past retention with their steps', async () => {
    await h.query(`INSERT INTO durable_runs (id, workflow_name, status, deadline_at) VALUES
      ('overdue', 'wf', 'WAITING', now() - interval '1 second'), ('fine', 'wf', 'WAITING', now() + interval '1 hour')`);
    // 'undo' has a step that recorded a compensation: it is handed to an executor to compensate
    await h.query(`INSERT INTO durable_runs (id, workflow_name, status, deadline_at, lease_owner, lease_expires_at, available_at) VALUES
      ('undo', 'wf', 'RUNNING', now() - interval '1 second', 'w1', now() + interval '1 minute', now() - interval '1 minute')`);
    await h.query(
      `INSERT INTO durable_steps (run_id, seq, name, status, compensation) VALUES ('undo', 0, 'book', 'SUCCEEDED', '{"by":"unbook"}')`,
    );
    expect(await sweepDeadlines(sql, 10)).toEqual({ failed: ['overdue'], compensating: ['undo'] });
    const [r] = await h.query(`SELECT status, error FROM durable_runs WHERE id = 'overdue'`);
    expect(r.status).toBe('FAILED');
    expect(r.error.message).toMatch(/exceeded its deadline.*timeoutMs/);
    const [u] = await h.query(
      `SELECT status, error, deadline_at, lease_owner, finished_at, available_at <= now() AS due FROM durable_runs WHERE id = 'undo'`,
    );
    expect(u).toMatchObject({ status: 'PENDING', deadline_at: null, lease_owner: null, finished_at: null, due: true });
    expect(u.error).toMatchObject({ code: 'DEADLINE_EXCEEDED' });
    expect(await sweepDeadlines(sql, 10)).toEqual({ failed: [], compensating: [] });

    await h.query(`INSERT INTO durable_runs (id, workflow_name, status, finished_at) VALUES
      ('old', 'wf', 'SUCCEEDED', now() - interval '2 days'), ('recent', 'wf', 'SUCCEEDED', now())`);
    await h.query(`INSERT INTO durable_steps (run_id, seq, name, status) VALUES ('old', 0, 's', 'SUCCEEDED')`);
    expect(await sweepRetention(sql, 24 * 3600_000, 10)).toBe(1);
    expect(await h.query(`SELECT id FROM durable_runs WHERE id IN ('old', 'recent')`)).toEqual([{ id: 'recent' }]);
    expect(await h.query(`SELECT * FROM durable_steps WHERE run_id = 'old'`)).toEqual([]);
  });

  it('ends a batch of top-level kept runs with the plain form, and writes what the full form writes', async () => {
    // The same ends twice: alone (every run top-level and kept: FINISH_PLAIN_RUNS), then with a child's
    // end in the batch (FINISH_RUNS). Both must leave the same rows: ends, carried checkpoints, history, refusals, fencing.
    const sent: string[] = [];
    const client = sql.sql;
    const recording: Store = {
      ...sql,
      sql: { ...client, query: (s, params) => (sent.push(typeof s === 'string' ? s : s.name), client.query(s, params)) },
    };
    const endBatch = async (prefix: string, withChild: boolean) => {
      await h.query(
        `INSERT INTO durable_runs (id, workflow_name, queue, input, status, lease_owner, lease_epoch, lease_expires_at, parent_id, cancel_requested_at)
         SELECT $1 || n, 'wf', 'q', '{}', 'RUNNING', 'A', 1, now() + interval '1 minute', CASE WHEN n = 'child' THEN $1 || 'parent' END,
                CASE WHEN n = 'refused' THEN now() END
         FROM unnest(ARRAY['ok', 'failed', 'refused', 'zombie', 'parent', 'child']) n`,
        [prefix],
      );
      const end = (n: string, status: 'SUCCEEDED' | 'FAILED', epoch = 1): RunEnd => ({
        runId: prefix + n,
        epoch,
        status,
        output: status === 'SUCCEEDED' ? '"out"' : null,
        error: status === 'FAILED' ? '{"message":"x"}' : null,
        parentId: null,
        steps: [checkpoint(prefix + n, epoch, 0)],
      });
      const ends = [end('ok', 'SUCCEEDED'), end('failed', 'FAILED'), end('refused', 'SUCCEEDED'), end('zombie', 'SUCCEEDED', 7)];
      if (withChild) ends.push({ ...end('child', 'SUCCEEDED'), parentId: prefix + 'parent' });
      sent.length = 0;
      const result = await finishRuns(recording, ends);
      const rows = await h.query(
        `SELECT substr(r.id, length($1) + 1) AS run, r.status, r.output, r.error IS NOT NULL AS failed, r.lease_owner, r.finished_at IS NOT NULL AS finished,
                (SELECT count(*)::int FROM durable_steps s WHERE s.run_id = r.id) AS steps,
                (SELECT string_agg(e.kind, ',' ORDER BY e.id) FROM durable_run_events e WHERE e.run_id = r.id) AS history
         FROM durable_runs r WHERE r.id LIKE $1 || '%' AND r.id NOT IN ($1 || 'parent', $1 || 'child') ORDER BY r.id`,
        [prefix],
      );
      return { result: [...result].map(([id, r]) => [id.slice(prefix.length), r]).sort(), rows, sent: [...sent] };
    };
    const plain = await endBatch('p-', false);
    const full = await endBatch('f-', true);
    expect(plain.sent).toEqual(['durable_finish_plain_runs']);
    expect(full.sent).toEqual(['durable_finish_runs']);
    expect(plain.result).toEqual([
      ['failed', 'ended'],
      ['ok', 'ended'],
      ['refused', 'cancelling'],
    ]);
    expect(full.result).toEqual([...plain.result, ['child', 'ended']].sort());
    expect(plain.rows).toEqual([
      { run: 'failed', status: 'FAILED', output: null, failed: true, lease_owner: null, finished: true, steps: 1, history: 'failed' },
      { run: 'ok', status: 'SUCCEEDED', output: 'out', failed: false, lease_owner: null, finished: true, steps: 1, history: 'completed' },
      { run: 'refused', status: 'RUNNING', output: null, failed: false, lease_owner: 'A', finished: false, steps: 1, history: null },
      { run: 'zombie', status: 'RUNNING', output: null, failed: false, lease_owner: 'A', finished: false, steps: 0, history: null },
    ]);
    expect(full.rows).toEqual(plain.rows);
    // The child's end in the full form signalled its parent (a RUNNING run's available_at moves past its
    // start: its executor's token); the parent of the plain batch's runs had no child end.
    expect(
      await h.query(`SELECT id, available_at > created_at AS signalled FROM durable_runs WHERE id LIKE '%parent' ORDER BY id`),
    ).toEqual([
      { id: 'f-parent', signalled: true },
      { id: 'p-parent', signalled: false },
    ]);
  });

  it("locks a finished child's parent in id order with the child: no deadlock with a heartbeat holding both", async () => {
    // A parent and its child, both RUNNING under epoch 1 (a child's id starts with its parent's: it sorts after it).
    await h.query(
      `INSERT INTO durable_runs (id, workflow_name, queue, input, status, lease_owner, lease_epoch, lease_expires_at, parent_id)
       VALUES ('p', 'wf', 'q', '{}', 'RUNNING', 'A', 1, now() + interval '1 minute', NULL),
              ('p:child:0', 'wf', 'q', '{}', 'RUNNING', 'A', 1, now() + interval '1 minute', 'p')`,
    );
    // A heartbeat's order: the parent first ...
    const hb = await h.pool.connect();
    try {
      await hb.query('BEGIN');
      await hb.query(`SELECT id FROM durable_runs WHERE id = 'p' FOR NO KEY UPDATE`);
      // ... while the child's end is written (it signals the parent) ...
      const end = finishRuns(sql, [{ runId: 'p:child:0', epoch: 1, status: 'SUCCEEDED', output: '1', error: null, parentId: 'p' }]);
      await h.lockWaiters(); // the end waits for the parent's row
      // ... then the child. The end waits for the parent before it takes the child, so this does not
      // wait for the end (before, the end held the child and waited for the parent: a deadlock
      // Postgres broke after deadlock_timeout, failing one of the two).
      await hb.query(`SET LOCAL lock_timeout = '2s'`);
      await hb.query(`SELECT id FROM durable_runs WHERE id = 'p:child:0' FOR NO KEY UPDATE`);
      await hb.query('COMMIT');
      expect(await end).toEqual(new Map([['p:child:0', 'ended']]));
    } finally {
      hb.release();
    }
    expect(await h.query(`SELECT id, status FROM durable_runs ORDER BY id`)).toEqual([
      { id: 'p', status: 'RUNNING' },
      { id: 'p:child:0', status: 'SUCCEEDED' },
    ]);
  });
});
