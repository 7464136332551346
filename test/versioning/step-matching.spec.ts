import {
  DeterminismError,
  Durable,
  replayAgainstRecording,
  replayRun,
  Step,
  type RecordedStep,
  type WorkflowDefinition,
} from 'nestjs-durable';

/**
 * The step-matching rule (workflow/step-matcher.ts) through replayAgainstRecording: the engine-level replay that
 * answers every durable operation from a run's checkpoints and runs no step body.
 */
describe('versioning: step matching on replay', () => {
  const executed: string[] = [];
  const step = (name: string) => Durable.step(name, () => (executed.push(name), name));
  const wf = (body: () => Promise<unknown>): WorkflowDefinition => ({ name: 'wf', queue: 'default', options: {}, run: body });
  const rec = (...names: string[]): RecordedStep[] =>
    names.map((name, seq) => ({ seq, name, status: 'SUCCEEDED', output: name.startsWith('durable.patch:') ? true : name, error: null }));
  const replay = (body: () => Promise<unknown>, steps: RecordedStep[]) =>
    replayAgainstRecording(wf(body), { id: 'r1', input: null, steps });

  afterEach(() => expect(executed).toEqual([])); // a replay never runs a step body

  class Declared {
    @Step({ name: 'still-declared' }) async kept() {
      executed.push('still-declared');
      return 1;
    }
  }
  void Declared;

  it('replays identical code to the end of the record, and stops at the first operation the run has not done', async () => {
    const r = await replay(async () => [await step('a'), await step('b'), await Durable.recv('paid'), await step('c')], rec('a', 'b'));
    expect(r).toMatchObject({ verdict: 'ok', outcome: 'recording-ended', frontier: { seq: 2, name: 'durable.recv:paid' }, mismatch: null });
  });

  it('keeps replayRun as a deprecated alias, and `ended` with its old word for `outcome`', async () => {
    expect(replayRun).toBe(replayAgainstRecording);
    const r = await replay(async () => [await step('a'), await step('b')], rec('a'));
    expect(r).toMatchObject({ outcome: 'recording-ended', ended: 'frontier' });
  });

  it('returns what the workflow returns when every operation is recorded', async () => {
    let got: unknown[] = [];
    const r = await replay(async () => (got = [await step('a'), await step('b')]), rec('a', 'b'));
    expect(r).toMatchObject({ verdict: 'ok', ended: 'returned' });
    expect(got).toEqual(['a', 'b']);
  });

  it('skips steps the code no longer calls when the run has passed them (removal is safe)', async () => {
    const seen: unknown[] = [];
    const r = await replay(
      async () => {
        seen.push(await step('a'), await step('c'), await step('d'));
      },
      rec('a', 'b', 'c', 'd'),
    );
    expect(r).toMatchObject({ verdict: 'ok', ended: 'returned' });
    expect(seen).toEqual(['a', 'c', 'd']); // c and d get their own recorded results, not b's
  });

  it('adds steps where the run has not been yet', async () => {
    const r = await replay(async () => [await step('a'), await step('new'), await step('b')], rec('a'));
    expect(r).toMatchObject({ verdict: 'ok', outcome: 'recording-ended', frontier: { seq: 1, name: 'new' } });
  });

  it('fails a step added where the run has already been (without patched) naming run, position and both steps', async () => {
    const r = await replay(async () => [await step('a'), await step('new'), await step('b')], rec('a', 'b'));
    expect(r).toMatchObject({ verdict: 'nondeterministic', mismatch: { seq: 1, recorded: 'b', actual: 'new', kind: 'changed' } });
    expect(r.error).toBeInstanceOf(DeterminismError);
    expect(r.error!.message).toMatch(/Run r1: step #1 was recorded as "b" but the workflow code now calls "new"/);
  });

  it('fails two reordered steps, at the position of the one called late', async () => {
    const r = await replay(async () => [await step('a'), await step('c'), await step('b')], rec('a', 'b', 'c'));
    expect(r).toMatchObject({ verdict: 'nondeterministic', mismatch: { seq: 1, recorded: 'b', actual: 'c', kind: 'reordered' } });
    expect(r.error!.message).toMatch(/steps were reordered/);
  });

  it('skips steps recorded last that the code no longer declares: a run waiting right after a removed step', async () => {
    const r = await replay(async () => [await step('a'), await Durable.recv('paid')], rec('a', 'removed-step'));
    expect(r).toMatchObject({ verdict: 'ok', outcome: 'recording-ended', frontier: { seq: 2, name: 'durable.recv:paid' } });
  });

  it('does not skip a step recorded last that is still a declared @Step(): an insertion before it is an error', async () => {
    const r = await replay(
      async () => [await step('a'), await Durable.recv('new'), await step('still-declared')],
      rec('a', 'still-declared'),
    );
    expect(r).toMatchObject({
      verdict: 'nondeterministic',
      mismatch: { seq: 1, recorded: 'still-declared', actual: 'durable.recv:new', kind: 'changed' },
    });
  });

  it('fails before new work starts while a skipped step is still a declared @Step() (it may have moved below)', async () => {
    const r = await replay(
      async () => [await step('a'), await step('c'), await step('new'), await step('still-declared')],
      rec('a', 'still-declared', 'c'),
    );
    expect(r).toMatchObject({
      verdict: 'nondeterministic',
      mismatch: { seq: 1, recorded: 'still-declared', actual: 'c', kind: 'reordered' },
    });
    expect(r.frontier).toBeNull(); // caught before "new" would have run
  });

  it('does not skip a wait recorded last (the run is in it): removing it is an error', async () => {
    const r = await replay(async () => [await step('a'), await step('b')], rec('a', 'durable.sleep'));
    expect(r).toMatchObject({ verdict: 'nondeterministic', mismatch: { seq: 1, recorded: 'durable.sleep', actual: 'b' } });
  });

  it('keeps a determinism error fatal when the workflow catches it', async () => {
    const r = await replay(async () => {
      await step('x').catch(() => null);
      return 'swallowed';
    }, rec('a'));
    expect(r.verdict).toBe('nondeterministic');
  });

  it('patched(): false (no position taken) for a run that passed the point before the patch existed', async () => {
    let flag: boolean | null = null;
    const r = await replay(
      async () => {
        await step('a');
        flag = await Durable.patched('fraud');
        if (flag) await step('fraud-check');
        await step('b');
        await step('c');
      },
      rec('a', 'b'),
    );
    expect(r).toMatchObject({ verdict: 'ok', outcome: 'recording-ended', frontier: { seq: 2, name: 'c' } });
    expect(flag).toBe(false);
  });

  it('patched(): true for a run that recorded the marker, and for one reaching it with the new code', async () => {
    const body = (flags: boolean[]) => async () => {
      await step('a');
      const f = await Durable.patched('fraud');
      flags.push(f);
      if (f) await step('fraud-check');
      await step('b');
    };
    const recorded: boolean[] = [];
    expect(await replay(body(recorded), rec('a', 'durable.patch:fraud', 'fraud-check', 'b'))).toMatchObject({
      verdict: 'ok',
      ended: 'returned',
    });
    const fresh: boolean[] = [];
    expect(await replay(body(fresh), rec('a'))).toMatchObject({ verdict: 'ok', frontier: { seq: 2, name: 'fraud-check' } });
    expect([recorded, fresh]).toEqual([[true], [true]]);
  });

  it('passes over a recorded patch marker once the patched() call is deleted (a retired patch)', async () => {
    const r = await replay(
      async () => [await step('a'), await step('fraud-check'), await step('b')],
      rec('a', 'durable.patch:fraud', 'fraud-check', 'b'),
    );
    expect(r).toMatchObject({ verdict: 'ok', ended: 'returned' });
  });

  it('a retired patch is unsafe while runs that took the old path remain: the replay says so', async () => {
    const r = await replay(async () => [await step('a'), await step('fraud-check'), await step('b')], rec('a', 'b'));
    expect(r).toMatchObject({ verdict: 'nondeterministic', mismatch: { seq: 1, recorded: 'b', actual: 'fraud-check' } });
  });

  it('a position a crash left empty (one step of a Promise.all) is new work, as before', async () => {
    const steps = rec('p0', 'p1', 'p2').filter((s) => s.seq !== 1);
    const r = await replay(() => Promise.all([step('p0'), step('p1'), step('p2')]), steps);
    expect(r).toMatchObject({ verdict: 'ok', outcome: 'recording-ended', frontier: { seq: 1, name: 'p1' } });
  });

  it('reports a workflow that throws on replay (e.g. a recorded result the new code cannot read)', async () => {
    const r = await replay(async () => {
      const a = (await step('a')) as unknown as { items: string[] };
      return a.items.length;
    }, rec('a'));
    expect(r).toMatchObject({ verdict: 'error', ended: 'threw' });
    expect(r.error).toBeInstanceOf(TypeError);
  });
});
