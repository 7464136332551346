import { Durable } from 'nestjs-durable';
import { RunSlot, type SlotCounts } from '../../libs/durable/src/worker/run-slot.js';
import { EngineHarness, eventually, sleep, STEADY } from '../support/engine-harness.js';

describe('run slots: a run whose code is done gives its slot to the next run while its end is written', () => {
  it('counts: ending frees the slot (at most `concurrency` runs ending), resumed takes it back, done releases what is held', () => {
    const counts: SlotCounts = { concurrency: 2, busy: 2, ending: 0 };
    let freed = 0;
    const slots = [0, 1].map(() => new RunSlot(counts, () => freed++));
    slots[0].ending();
    expect(counts).toEqual({ concurrency: 2, busy: 1, ending: 1 });
    expect(freed).toBe(1);
    slots[0].resumed(); // its end was refused: it compensates, in a slot
    expect(counts).toEqual({ concurrency: 2, busy: 2, ending: 0 });
    slots[0].ending();
    expect(slots[0].done()).toBe(false);
    expect(counts).toEqual({ concurrency: 2, busy: 1, ending: 0 });
    expect(slots[1].done()).toBe(true);
    expect(counts).toEqual({ concurrency: 2, busy: 0, ending: 0 });

    // Past `concurrency` runs ending, a run keeps its slot until its end is written.
    const full: SlotCounts = { concurrency: 1, busy: 1, ending: 1 };
    const kept = new RunSlot(full, () => freed++);
    kept.ending();
    expect(full).toEqual({ concurrency: 1, busy: 1, ending: 1 });
    expect(kept.done()).toBe(true);
    expect(full).toEqual({ concurrency: 1, busy: 0, ending: 1 });
  });

  describe('in a worker with concurrency 1', () => {
    let h: EngineHarness;
    let openGate!: () => void;
    const gate = new Promise<void>((r) => (openGate = r));
    let firstStepRunning = false;
    beforeAll(async () => {
      h = await EngineHarness.create('run_slots', STEADY);
      await h.engine(
        {
          gated: async () =>
            Durable.step('wait', async () => {
              firstStepRunning = true;
              await gate;
              return 'a';
            }),
          quick: async () => Durable.step('one', async () => 'b'),
        },
        { concurrency: 1 },
      );
    });
    afterAll(() => h.close());

    it('the next run executes while the first run’s end waits for the database', async () => {
      const engine = h.engines[0];
      const a = await engine.startRun('gated', null, { id: 'slot-a' });
      await eventually(async () => firstStepRunning || undefined);
      const b = await engine.startRun('quick', null, { id: 'slot-b' });
      const blocker = await h.pool.connect();
      try {
        // A's end (and its last checkpoint, which goes with it) waits behind this row lock.
        await blocker.query('BEGIN');
        await blocker.query(`SELECT 1 FROM durable_runs WHERE id = 'slot-a' FOR UPDATE`);
        openGate();
        await expect(b.result({ timeoutMs: 10_000 })).resolves.toBe('b');
        await sleep(100);
        const [rowA] = await h.query(`SELECT status FROM durable_runs WHERE id = 'slot-a'`);
        expect(rowA.status).toBe('RUNNING');
        await blocker.query('COMMIT');
      } finally {
        blocker.release();
      }
      await expect(a.result({ timeoutMs: 10_000 })).resolves.toBe('a');
    });
  });
});
