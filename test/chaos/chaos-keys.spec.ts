import { chaosSettings } from './chaos-config.js';
import { judgeKeys, type KeyFacts } from './chaos-keys.js';

/**
 * The chaos judge of rate limits, singleton and debounce (chaos-keys.ts) fails when a rule is
 * broken: given the facts a broken engine would leave, it names the broken rule. (The chaos run
 * itself, with the rules broken in the engine: bench/README.md, "Flow control under the chaos".)
 */
describe('chaos judge: rate limit, singleton, debounce', () => {
  const s = chaosSettings({ runs: 100, slotRuns: 20 });
  const good = (): KeyFacts => ({
    ratedStatuses: { SUCCEEDED: 20 },
    // 10 starts per 2 s: two bursts 2 s apart
    ratedStarts: [...Array.from({ length: 10 }, (_, i) => 1_000 + i), ...Array.from({ length: 10 }, (_, i) => 3_001 + i)],
    singleStatuses: { SUCCEEDED: 2 },
    singleIntervals: [
      { runId: 'a', key: 'single-0', pid: 1, start: 0, end: 100 },
      { runId: 'b', key: 'single-0', pid: 2, start: 150, end: 250 },
    ],
    bounceStatuses: { SUCCEEDED: 2 },
    bounceStarts: 12,
    earlyBounces: [],
    duplicates: [],
  });

  it('passes what the rules allow', () => {
    const j = judgeKeys(s, good());
    expect(j.violations).toEqual([]);
    expect(j.figures).toMatchObject({ mostRated: 10, singleOverlap: 1, keyDuplicates: 0, earlyBounces: 0, bounceRuns: 2 });
  });

  it('a rate window with one start too many', () => {
    const f = good();
    f.ratedStarts = [...f.ratedStarts.slice(0, 10), 2_999, ...f.ratedStarts.slice(10)];
    f.ratedStatuses = { SUCCEEDED: 20, RUNNING: 1 };
    expect(judgeKeys(s, f).violations).toEqual([
      'rate-limited runs not all SUCCEEDED: SUCCEEDED 20, RUNNING 1',
      'rate limit exceeded: 11 starts in one 2000-ms window (limit 10)',
    ]);
  });

  it('two active runs of a dedupe key: executions that overlap, or a snapshot that saw both', () => {
    const f = good();
    f.singleIntervals[1].start = 99;
    f.duplicates = [{ kind: 'dedupe', key: 'single-0', runs: 2, at: 0 }];
    expect(judgeKeys(s, f).violations).toEqual([
      'singleton: 2 runs of one dedupe key executed at once',
      'singleton: 2 active runs of dedupe key single-0 at 1970-01-01T00:00:00.000Z',
    ]);
  });

  it('debounced starts that did not collapse, or a run that started before its time', () => {
    const f = good();
    f.duplicates = [{ kind: 'debounce', key: 'bounce-1', runs: 3, at: 0 }];
    f.earlyBounces = [{ id: 'x', startedAt: '12:00:00.100', due: '12:00:00.400' }];
    expect(judgeKeys(s, f).violations).toEqual([
      'debounce: 3 runs of debounce key bounce-1 waiting to start at 1970-01-01T00:00:00.000Z',
      'debounce: run x started at 12:00:00.100, before 12:00:00.400',
    ]);
    f.duplicates = [];
    f.earlyBounces = [];
    f.bounceStatuses = { SUCCEEDED: 12 };
    expect(judgeKeys(s, f).violations).toEqual(['debounce: 12 starts made 12 runs (none collapsed)']);
  });
});
