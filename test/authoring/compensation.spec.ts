import { CompensationFailedError, Durable, NonRetryableError, Step, WorkflowCancelledError, WorkflowFailedError } from 'nestjs-durable';
import { EngineHarness, eventually, sleep, STEADY } from '../support/engine-harness.js';

/**
 * Compensation (sagas): a step declares what undoes it; the compensation is recorded with the step's
 * checkpoint; on failure, on cancel(id, { compensate: true }) and on Durable.compensate() the
 * compensations run newest first, as durable steps with their own retries.
 */
describe('authoring: compensation', () => {
  let h: EngineHarness;
  beforeAll(async () => {
    h = await EngineHarness.create('compensation', STEADY);
  });
  afterAll(() => h.close());

  const status = async (id: string) => (await h.query(`SELECT status FROM durable_runs WHERE id = $1`, [id]))[0]?.status;
  const steps = async (id: string) =>
    h.query<{ seq: number; name: string; status: string; compensation: unknown; compensates: number | null }>(
      `SELECT seq, name, status, compensation, compensates FROM durable_steps WHERE run_id = $1 ORDER BY seq`,
      [id],
    );
  /**
   * The history kinds that tell the story, in order, without the claims and the lease bookkeeping a
   * loaded machine may add (a missed heartbeat: lease_lost, lease_expired, claimed again, and the
   * replay announcing its compensations again; the run still completes once).
   */
  const story = async (e: { getRunEvents(id: string): Promise<Array<{ kind: string }>> }, id: string) =>
    (await e.getRunEvents(id))
      .map((x) => x.kind)
      .filter((k) => !['claimed', 'woken', 'lease_lost', 'lease_expired', 'released'].includes(k))
      .filter((k, i, all) => k !== all[i - 1]);
  const ledger = async (id: string) =>
    (await h.query<{ step: string; amount: number }>(`SELECT step, amount FROM test_ledger WHERE run_id = $1 ORDER BY at`, [id])).map(
      (r) => `${r.step}:${r.amount}`,
    );

  /** Three steps that book into the ledger (transactional) and undo their booking. */
  class Booking {
    log: string[] = [];
    failAt: number | null = null;
    @Step({ transactional: true, compensate: 'unbook' })
    async book(runId: string, what: string, amount: number) {
      const tx = Durable.tx<{ $executeRawUnsafe(sql: string, ...p: unknown[]): Promise<number> }>();
      await tx.$executeRawUnsafe(`INSERT INTO test_ledger (run_id, step, amount) VALUES ($1, $2, $3)`, runId, what, amount);
      this.log.push(`book ${what}`);
      return { booked: what };
    }
    @Step({ transactional: true, retries: { maxAttempts: 3, initialDelayMs: 10 } })
    async unbook(runId: string, what: string, amount: number, result: { booked: string }) {
      const tx = Durable.tx<{ $executeRawUnsafe(sql: string, ...p: unknown[]): Promise<number> }>();
      await tx.$executeRawUnsafe(`INSERT INTO test_ledger (run_id, step, amount) VALUES ($1, $2, $3)`, runId, what, -amount);
      this.log.push(`unbook ${result.booked}`);
    }
    @Step({ retries: 0 })
    async explode(message: string) {
      throw new NonRetryableError(message);
    }
  }

  it('a failed workflow runs the compensations of its completed steps, newest first, then ends FAILED', async () => {
    const b = new Booking();
    const e = await h.engine({
      saga: async (input: { runId: string }) => {
        await b.book(input.runId, 'a', 1);
        await b.book(input.runId, 'b', 2);
        await b.explode('declined');
        return 'never';
      },
    });
    const handle = await e.startRun('saga', { runId: 'saga-1' }, { id: 'saga-1' });
    const err = (await handle.result({ timeoutMs: 10_000 }).catch((x) => x)) as WorkflowFailedError;
    expect(err).toBeInstanceOf(WorkflowFailedError);
    expect(err.runError).toMatchObject({ message: 'declined' });
    // A transactional step's body runs again when its transaction did not commit (on a loaded machine
    // a 1.5 s lease can be lost mid-step: CI saw 'book a' twice); its effects are what is exactly once (the ledger).
    expect([...new Set(b.log)]).toEqual(['book a', 'book b', 'unbook b', 'unbook a']);
    expect(await ledger('saga-1')).toEqual(['a:1', 'b:2', 'b:-2', 'a:-1']);
    const rows = await steps('saga-1');
    expect(rows.map((r) => [r.seq, r.name, r.status, r.compensates])).toEqual([
      [0, 'book', 'SUCCEEDED', null],
      [1, 'book', 'SUCCEEDED', null],
      [2, 'explode', 'FAILED', null],
      [3, 'compensate:book', 'SUCCEEDED', 1],
      [4, 'compensate:book', 'SUCCEEDED', 0],
    ]);
    expect(rows[0].compensation).toEqual({ by: 'unbook', args: ['saga-1', 'a', 1] });
    expect(await story(e, handle.id)).toEqual(['created', 'step_failed', 'compensating', 'compensated', 'failed']);
    const view = await e.getRun(handle.id);
    expect(view?.steps[0].compensation).toEqual({ by: 'unbook', args: ['saga-1', 'a', 1] });
    expect(view?.steps[3].compensates).toBe(1);
  });

  it('Durable.compensate() undoes what was done so far and lets the workflow go on; nothing runs twice', async () => {
    const b = new Booking();
    const e = await h.engine({
      explicit: async (input: { runId: string }) => {
        await b.book(input.runId, 'a', 1);
        try {
          await b.explode('card declined');
        } catch {
          const n = await Durable.compensate();
          await b.book(input.runId, 'fee', 5); // recorded after the compensation: undone only on a later failure
          return { compensated: n };
        }
        return 'never';
      },
    });
    const handle = await e.startRun('explicit', { runId: 'explicit-1' }, { id: 'explicit-1' });
    expect(await handle.result({ timeoutMs: 10_000 })).toEqual({ compensated: 1 });
    expect(await ledger('explicit-1')).toEqual(['a:1', 'a:-1', 'fee:5']);
    expect(b.log).toEqual(['book a', 'unbook a', 'book fee']);
  });

  it('a compensation that fails after its retries stops the older ones: FAILED with COMPENSATION_FAILED; resume retries it', async () => {
    let brokenUndo = true;
    const done: string[] = [];
    const e = await h.engine({
      brokenUndo: async () => {
        await Durable.step('first', () => 1, { compensate: () => done.push('undo first') });
        await Durable.step('second', () => 2, {
          compensate: {
            retries: { maxAttempts: 2, initialDelayMs: 10 },
            run: (r: number) => {
              if (brokenUndo) throw new Error(`cannot undo ${r}`);
              done.push('undo second');
            },
          },
        });
        await Durable.step('third', () => {
          throw new NonRetryableError('boom');
        });
      },
    });
    const handle = await e.startRun('brokenUndo', null);
    const err = (await handle.result({ timeoutMs: 10_000 }).catch((x) => x)) as WorkflowFailedError;
    expect(err.runError).toMatchObject({ code: 'COMPENSATION_FAILED', name: 'CompensationFailedError' });
    expect(String((err.runError as { message: string }).message)).toContain('compensation of step "second" (#1) failed: cannot undo 2');
    expect(done).toEqual([]); // the older step was not compensated
    brokenUndo = false;
    await e.resume(handle.id);
    await expect(handle.result({ timeoutMs: 10_000 })).rejects.toThrow(WorkflowFailedError);
    expect(done).toEqual(['undo second', 'undo first']);
    const run = await e.getRun(handle.id);
    expect((run?.error as { message: string }).message).toBe('boom');
    expect(run?.steps.map((s) => `${s.name}:${s.status}`)).toEqual([
      'first:SUCCEEDED',
      'second:SUCCEEDED',
      'third:FAILED',
      'compensate:second:SUCCEEDED',
      'compensate:first:SUCCEEDED',
    ]);
    expect(new CompensationFailedError('r', 's', 1, new Error('x')).code).toBe('COMPENSATION_FAILED');
  });

  it('cancel({ compensate: true }) while a step runs: the step completes (its checkpoint commits) and is compensated too', async () => {
    const log: string[] = [];
    let release: () => void = () => {};
    const gate = new Promise<void>((r) => (release = r));
    class Steps {
      @Step({ compensate: 'undo' }) async work(name: string, waitFor?: boolean) {
        log.push(`do ${name}`);
        if (waitFor) await gate; // ignores Durable.signal(): it completes
        return name;
      }
      @Step() async undo(name: string, _waitFor: boolean | undefined, result: string) {
        log.push(`undo ${name}=${result}`);
      }
    }
    const s = new Steps();
    const e = await h.engine({
      cancelDuringStep: async () => {
        await s.work('one');
        await s.work('two', true);
        await s.work('three'); // never runs: the run is being cancelled
        return 'done';
      },
    });
    const handle = await e.startRun('cancelDuringStep', null);
    await eventually(async () => log.includes('do two'), 5_000, 'step two to start');
    await e.cancel(handle.id, { compensate: true });
    const view = await e.getRun(handle.id);
    expect(view?.status).toBe('RUNNING');
    expect(view?.cancelRequestedAt).toBeInstanceOf(Date);
    release();
    await expect(handle.result({ timeoutMs: 10_000 })).rejects.toThrow(WorkflowCancelledError);
    expect(log).toEqual(['do one', 'do two', 'undo two=two', 'undo one=one']);
    expect(await story(e, handle.id)).toEqual(['created', 'cancel_requested', 'compensating', 'compensated', 'cancelled']);
    await e.cancel(handle.id, { compensate: true }); // idempotent
  });

  it('cancel({ compensate: true }) aborts a running step that honours its signal: it is not compensated (it did not complete)', async () => {
    const log: string[] = [];
    class Steps {
      @Step({ compensate: 'undo', retries: 3 }) async work(name: string, long?: boolean) {
        log.push(`do ${name}`);
        if (long) {
          await Durable.sleep(60_000); // inside a step: a plain pause that ends with the signal
          log.push('long finished');
        }
        return name;
      }
      @Step() async undo(name: string) {
        log.push(`undo ${name}`);
      }
    }
    const s = new Steps();
    const e = await h.engine({
      abortable: async () => {
        await s.work('one');
        await s.work('long', true);
      },
    });
    const handle = await e.startRun('abortable', null);
    await eventually(async () => log.includes('do long'), 5_000, 'the long step');
    await e.cancel(handle.id, { compensate: true });
    await expect(handle.result({ timeoutMs: 10_000 })).rejects.toThrow(WorkflowCancelledError);
    expect(log).toEqual(['do one', 'do long', 'undo one']);
    expect((await steps(handle.id)).map((r) => r.name)).toEqual(['work', 'compensate:work']);
  });

  it('cancel({ compensate: true }) of a WAITING run replays it, undoes its steps and ends it CANCELLED; nothing to undo → CANCELLED at once', async () => {
    const log: string[] = [];
    const e = await h.engine(
      {
        waiter: async () => {
          await Durable.step('reserve', () => log.push('reserve'), { compensate: () => log.push('release') });
          await Durable.recv('never', { timeoutMs: 60_000 });
          await Durable.step('after', () => log.push('after'), { compensate: () => log.push('undo after') });
        },
        plain: async () => Durable.recv('never'),
      },
      { suspendGraceMs: 0, inMemoryWaitMaxMs: 100 },
    );
    const handle = await e.startRun('waiter', null);
    await eventually(async () => (await status(handle.id)) === 'WAITING', 5_000, 'the run to suspend');
    await e.cancel(handle.id, { compensate: true });
    await expect(handle.result({ timeoutMs: 10_000 })).rejects.toThrow(WorkflowCancelledError);
    expect(log).toEqual(['reserve', 'release']);

    const other = await e.startRun('plain', null);
    await eventually(async () => (await status(other.id)) === 'WAITING', 5_000, 'the other run to suspend');
    await e.cancel(other.id, { compensate: true });
    expect(await status(other.id)).toBe('CANCELLED'); // no step to undo: no execution needed
    const last = (await e.getRunEvents(other.id)).at(-1);
    expect(last).toMatchObject({ kind: 'cancelled', detail: { compensate: true, compensations: 0 } });
  });

  it('a run asked to cancel with compensation just before it ends is compensated instead of SUCCEEDED', async () => {
    const log: string[] = [];
    const e = await h.engine({
      lastMoment: async () => {
        await Durable.step('do', () => log.push('do'), { compensate: () => log.push('undo') });
        // A cancel the executor has not heard of yet (no hint, no heartbeat): its SUCCEEDED end is refused.
        await Durable.step('cancel behind its back', async () => {
          await h.query(`UPDATE durable_runs SET cancel_requested_at = now() WHERE id = $1`, [Durable.runId()]);
        });
        return 'done';
      },
    });
    const handle = await e.startRun('lastMoment', null);
    await expect(handle.result({ timeoutMs: 10_000 })).rejects.toThrow(WorkflowCancelledError);
    expect(log).toEqual(['do', 'undo']);
  });

  it('a child is cancelled with its parent, with compensation too', async () => {
    const log: string[] = [];
    const e = await h.engine(
      {
        parent: async () => {
          await Durable.step('parent step', () => log.push('parent'), { compensate: () => log.push('undo parent') });
          const child = await Durable.startChild('child', null);
          return child.result();
        },
        child: async () => {
          await Durable.step('child step', () => log.push('child'), { compensate: () => log.push('undo child') });
          await Durable.recv('never');
        },
      },
      { suspendGraceMs: 0 },
    );
    const handle = await e.startRun('parent', null);
    await eventually(
      async () =>
        (
          await h.query(
            `SELECT 1 FROM durable_steps s JOIN durable_runs r ON r.id = s.run_id WHERE r.parent_id = $1 AND s.name = 'child step' AND s.status = 'SUCCEEDED'`,
            [handle.id],
          )
        ).length > 0,
      5_000,
      "the child step's checkpoint",
    );
    await e.cancel(handle.id, { compensate: true });
    await expect(handle.result({ timeoutMs: 10_000 })).rejects.toThrow(WorkflowCancelledError);
    await eventually(async () => log.includes('undo child'), 5_000, 'the child to compensate');
    expect(log.filter((l) => l.startsWith('undo')).sort()).toEqual(['undo child', 'undo parent']);
    const child = async () => (await h.query(`SELECT status FROM durable_runs WHERE parent_id = $1`, [handle.id]))[0].status;
    await eventually(async () => (await child()) === 'CANCELLED', 5_000, 'the child to end CANCELLED');
  });

  it('replay of a run with compensations is deterministic: a new execution replays every step and compensation, runs nothing', async () => {
    const b = new Booking();
    const e = await h.engine({
      replayed: async (input: { runId: string }) => {
        await b.book(input.runId, 'x', 1);
        await b.book(input.runId, 'y', 2);
        await b.explode('nope');
      },
    });
    const handle = await e.startRun('replayed', { runId: 'replayed-1' }, { id: 'replayed-1' });
    await expect(handle.result({ timeoutMs: 10_000 })).rejects.toThrow(WorkflowFailedError);
    const before = await steps('replayed-1');
    const log = b.log.length;
    // Execute the finished run again from its checkpoints: every recorded result and compensation replays.
    await h.query(`UPDATE durable_runs SET status = 'PENDING', finished_at = NULL, error = NULL WHERE id = $1`, ['replayed-1']);
    await eventually(async () => (await status('replayed-1')) === 'FAILED', 10_000, 'the replay to end');
    expect(b.log.length).toBe(log); // no step, no compensation executed again
    expect(await steps('replayed-1')).toEqual(before);
    expect(await ledger('replayed-1')).toEqual(['x:1', 'y:2', 'y:-2', 'x:-1']);
  });

  it('a run past its deadline compensates, suspended or in the middle of a step, then ends FAILED with DEADLINE_EXCEEDED', async () => {
    const b = new Booking();
    let slowStarted = 0;
    const e = await h.engine({
      late: [
        async (input: { runId: string; slow: boolean }) => {
          await b.book(input.runId, 'a', 1);
          await b.book(input.runId, 'b', 2);
          if (input.slow) {
            // a step that ignores its signal and outlives the deadline: its result is not kept
            await Durable.step('slow', async () => {
              slowStarted++;
              await sleep(1_500);
            });
          } else await Durable.sleep(60_000);
          await b.book(input.runId, 'never', 9);
          return 'never';
        },
        { timeoutMs: 700 },
      ],
    });
    for (const slow of [false, true]) {
      const id = `late-${slow ? 'slow' : 'sleep'}`;
      const handle = await e.startRun('late', { runId: id, slow }, { id });
      const err = (await handle.result({ timeoutMs: 10_000 }).catch((x) => x)) as WorkflowFailedError;
      expect(err).toBeInstanceOf(WorkflowFailedError);
      expect(err.runError).toMatchObject({ code: 'DEADLINE_EXCEEDED', name: 'DeadlineExceededError' });
      expect(await ledger(id)).toEqual(['a:1', 'b:2', 'b:-2', 'a:-1']);
      const kinds = await story(e, id);
      expect(kinds.slice(kinds.indexOf('deadline_exceeded'))).toEqual(['deadline_exceeded', 'compensating', 'compensated', 'failed']);
      const rows = await steps(id);
      expect(rows.filter((r) => r.name === 'compensate:book').map((r) => r.compensates)).toEqual([1, 0]);
      expect(rows.some((r) => r.name === 'book' && r.seq > 1)).toBe(false);
    }
    expect(slowStarted).toBe(1); // the unwinding execution did not run the slow step again
    // (a run with nothing to undo fails at once in the sweeper: test/waits/control.spec.ts)
  });

  it('bad cancel options are an InvalidArgumentError', async () => {
    const e = h.engines[0];
    await expect(e.cancel('x', { compensate: 'yes' as never })).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
    await expect(e.cancel('x', 42 as never)).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
  });
});
