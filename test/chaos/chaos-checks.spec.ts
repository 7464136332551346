import { chaosSettings } from './chaos-config.js';
import { judgeDuplicates, LEASE_LOST_LIVE, unrecovered } from './chaos-checks.js';
import type { ChaosFacts } from './chaos-facts.js';

/**
 * How the chaos report explains a plain step executed twice: the analysis is a pure function of
 * the run's history, so it is checked here on the histories seen in real chaos runs.
 */
describe('chaos checks: re-executed steps', () => {
  const s = chaosSettings();
  /** Run r's step s1 executed by worker 101, then by 102, whose checkpoint was accepted; `history` of run r. */
  const facts = (history: Array<{ kind: string; worker: string | null; t: number }>) =>
    ({
      duplicates: [
        {
          run: 'r',
          step: 's1',
          executions: [
            { pid: 101, t: 1_000 },
            { pid: 102, t: 5_000 },
          ],
          acceptedPid: 102,
        },
      ],
      history: new Map([['r', history]]),
    }) as unknown as ChaosFacts;
  const claimed = [
    { kind: 'claimed', worker: 'chaos:101', t: 900 },
    { kind: 'claimed', worker: 'chaos:102', t: 4_900 },
  ];

  it('a re-execution with no kill, freeze, outage or lost lease is unexplained', () => {
    const v = judgeDuplicates(facts(claimed), [], s, 3);
    expect(v.unexplained).toEqual([{ run: 'r', step: 's1', pid: 101 }]);
    expect(v.overBudget).toEqual(['unexplained: 1 extra executions > 0']);
  });

  it("the sweeper took the live worker's lease (lease_expired): a timing matter, not a violation", () => {
    const v = judgeDuplicates(facts([claimed[0], { kind: 'lease_expired', worker: 'chaos:101', t: 4_000 }, claimed[1]]), [], s, 3);
    expect(v.unexplained).toEqual([]);
    expect(v.byCause.get(LEASE_LOST_LIVE)).toBe(1);
    expect(v.overBudget).toEqual([]);
  });

  it('the worker gave the lease up itself after a late renewal (lease_lost, released): a timing matter too', () => {
    const lost = [
      claimed[0],
      { kind: 'lease_lost', worker: 'chaos:101', t: 1_100 },
      { kind: 'released', worker: null, t: 1_101 },
      claimed[1],
    ];
    const v = judgeDuplicates(facts(lost), [], s, 3);
    expect(v.unexplained).toEqual([]);
    expect(v.byCause.get(LEASE_LOST_LIVE)).toBe(1);
  });

  it("the worker handed the run back with no 'lease_lost' row of its own (released while it held the run): a timing matter too", () => {
    const released = [claimed[0], { kind: 'released', worker: null, t: 1_101 }, claimed[1]];
    const v = judgeDuplicates(facts(released), [], s, 3);
    expect(v.unexplained).toEqual([]);
    expect(v.byCause.get(LEASE_LOST_LIVE)).toBe(1);
    // Released while another worker held the run: not this worker's loss.
    const other = [{ kind: 'claimed', worker: 'chaos:103', t: 900 }, { kind: 'released', worker: null, t: 1_101 }, claimed[1]];
    expect(judgeDuplicates(facts(other), [], s, 3).unexplained).toEqual([{ run: 'r', step: 's1', pid: 101 }]);
  });

  it('a loss in an earlier holding of the run does not explain a later execution by the same worker', () => {
    const history = [
      claimed[0],
      { kind: 'released', worker: null, t: 950 },
      { kind: 'claimed', worker: 'chaos:101', t: 990 }, // the execution at 1,000 runs in this holding, which nothing ended
      claimed[1],
    ];
    expect(judgeDuplicates(facts(history), [], s, 3).unexplained).toEqual([{ run: 'r', step: 's1', pid: 101 }]);
  });

  it("another worker's lost lease does not explain this worker's re-execution", () => {
    const other = [claimed[0], { kind: 'lease_lost', worker: 'chaos:103', t: 1_100 }, claimed[1]];
    expect(judgeDuplicates(facts(other), [], s, 3).unexplained).toEqual([{ run: 'r', step: 's1', pid: 101 }]);
  });

  it("an execution stamped just after its process's SIGKILL was a statement in flight: the kill explains it", () => {
    const history = [claimed[0], { kind: 'lease_expired', worker: 'chaos:101', t: 4_000 }, claimed[1]];
    const kill = { kind: 'kill', pid: 101, at: 970 } as never;
    const v = judgeDuplicates(facts(history), [kill], s, 3);
    expect(v.byCause.get('SIGKILL of 101')).toBe(1);
    expect(v.byCause.get(LEASE_LOST_LIVE)).toBeUndefined();
    // Long after a kill, a process of that pid cannot have run it.
    const late = judgeDuplicates(facts(history), [{ kind: 'kill', pid: 101, at: -1_000 } as never], s, 3);
    expect(late.byCause.get(LEASE_LOST_LIVE)).toBe(1);
  });
});

/** Which activities a worker logged as failing in an outage and never as working again (from its stdout and stderr lines). */
describe('chaos checks: activities that never recovered', () => {
  const failed = (at: number, what: string) => ({
    at,
    text: `ERROR [Durable] ${what} failed: connection refused; retrying with back-off (logged once per outage)`,
  });
  const back = (at: number, what: string) => ({ at, text: `LOG [Durable] ${what} works again after 40 ms and 2 failed attempts` });

  it('a failure followed by its recovery is recovered; one without is not', () => {
    expect(unrecovered([failed(10, 'writing checkpoints'), back(60, 'writing checkpoints'), failed(70, 'claiming')], 0)).toEqual([
      'claiming',
    ]);
  });

  it('a recovery read before its failure (the two streams arrived out of order) still counts', () => {
    expect(unrecovered([back(50, 'writing checkpoints'), failed(51, 'writing checkpoints')], 0)).toEqual([]);
  });

  it('a second outage without its recovery is unrecovered', () => {
    const lines = [failed(10, 'heartbeat'), back(20, 'heartbeat'), failed(30, 'heartbeat')];
    expect(unrecovered(lines, 0)).toEqual(['heartbeat']);
    expect(unrecovered(lines, 25)).toEqual(['heartbeat']);
  });
});
