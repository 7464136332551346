import { Step } from 'nestjs-durable';
import { EngineHarness, sleep, STEADY } from '../support/engine-harness.js';

/**
 * A workflow that never awaits its step. Decided behaviour: the run's end waits for every step
 * the workflow started, so the step is checkpointed before the run is marked finished (never
 * "SUCCEEDED, step missing, step effect done"), and a dangling step's rejection is handled (no
 * unhandled rejection crashing the process). The workflow's own return or throw decides the
 * run's status, as when it catches a step's failure.
 */
describe('bad input: a workflow that does not await its step', () => {
  let h: EngineHarness;
  const calls: string[] = [];
  class Steps {
    @Step({ retries: 0 }) async slow(ms: number) {
      calls.push('slow');
      await sleep(ms);
      return 'slow done';
    }
    @Step({ retries: 0 }) async boom() {
      calls.push('boom');
      await sleep(100);
      throw new Error('nobody listens');
    }
  }
  const steps = new Steps();
  const unhandled: unknown[] = [];
  const onUnhandled = (reason: unknown) => unhandled.push(reason);

  beforeAll(async () => {
    process.on('unhandledRejection', onUnhandled);
    h = await EngineHarness.create('dangling', STEADY);
    // The harness pool has no error listener: an idle connection cut by the final DROP DATABASE … (FORCE) would be an unhandled error.
    h.pool.on('error', () => {});
    await h.engine({
      forgetful: async () => {
        void steps.slow(400); // no await
        return 'returned at once';
      },
      forgetfulThrows: async () => {
        void steps.slow(400);
        throw new Error('workflow failed while its step ran');
      },
      forgetfulFailing: async () => {
        void steps.boom();
        return 'returned at once';
      },
    });
  });
  afterAll(async () => {
    process.off('unhandledRejection', onUnhandled);
    await h.close();
  });
  beforeEach(() => (calls.length = 0));

  const runOf = async (id: string) =>
    (
      await h.query(
        `SELECT status, finished_at, (SELECT json_agg(json_build_object('name', name, 'status', status, 'finished', finished_at) ORDER BY seq)
       FROM durable_steps WHERE run_id = r.id) AS steps FROM durable_runs r WHERE id = $1`,
        [id],
      )
    )[0];

  it('the run ends after the step it did not await, which is checkpointed (not cut off by the run end)', async () => {
    const handle = await h.engines[0].startRun('forgetful', null);
    expect(await handle.result({ timeoutMs: 10_000 })).toBe('returned at once');
    const run = await runOf(handle.id);
    expect(run.status).toBe('SUCCEEDED');
    expect(run.steps).toEqual([{ name: 'slow', status: 'SUCCEEDED', finished: expect.anything() }]);
    expect(new Date(run.steps[0].finished).getTime()).toBeLessThanOrEqual(new Date(run.finished_at).getTime());
    expect(calls).toEqual(['slow']);
  });

  it('a workflow that throws while its step runs fails after the step is checkpointed', async () => {
    const handle = await h.engines[0].startRun('forgetfulThrows', null);
    await expect(handle.result({ timeoutMs: 10_000 })).rejects.toThrow(/workflow failed while its step ran/);
    const run = await runOf(handle.id);
    expect(run.status).toBe('FAILED');
    expect(run.steps).toEqual([{ name: 'slow', status: 'SUCCEEDED', finished: expect.anything() }]);
  });

  it("a dangling step's failure is recorded on the step, never an unhandled rejection", async () => {
    const handle = await h.engines[0].startRun('forgetfulFailing', null);
    expect(await handle.result({ timeoutMs: 10_000 })).toBe('returned at once');
    await sleep(200);
    expect(unhandled).toEqual([]);
    const run = await h.engines[0].getRun(handle.id);
    expect(run?.steps).toEqual([
      expect.objectContaining({ name: 'boom', status: 'FAILED', error: expect.objectContaining({ message: 'nobody listens' }) }),
    ]);
  });
});
