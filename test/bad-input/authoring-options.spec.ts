import {
  Durable,
  DurableEngine,
  InvalidArgumentError,
  InvalidOptionsError,
  NotInWorkflowError,
  Step,
  WorkflowRegistry,
  type StepOptions,
} from 'nestjs-durable';

/**
 * Bad input to the authoring options: step timeouts, compensations, cancel options, progress and
 * Durable.compensate() where they cannot work. Each is a typed error naming what to do, when the
 * class is defined (decorators) or at the call — never a silent surprise at run time.
 */
describe('bad input: timeouts, compensations, progress, cancel options', () => {
  const defineStep = (options: StepOptions) => {
    class Payments {
      @Step(options) async charge(orderId: string) {
        return orderId;
      }
      async refund(orderId: string, charge: string) {
        return `${orderId}:${charge}`;
      }
    }
    return Payments;
  };
  const errorOf = (fn: () => unknown) => {
    try {
      fn();
    } catch (e) {
      return e as Error;
    }
    throw new Error('expected an error');
  };

  it.each([
    [{ timeoutMs: 0 }, /@Step\(\) on Payments\.charge\(\): timeoutMs must be a number of ms between 1 and 2147483647 \(got 0\)/],
    [{ timeoutMs: -5 }, /timeoutMs must be a number of ms between 1 and 2147483647/],
    [{ timeoutMs: Number.NaN }, /timeoutMs must be a number of ms between 1 and 2147483647 \(got null\)/],
    [{ timeoutMs: '30s' }, /timeoutMs must be a number of ms/],
    [{ timeoutMs: 2 ** 31 }, /timeoutMs must be a number of ms between 1 and 2147483647/],
    [
      { timeoutMs: 1_000, transactional: true },
      /timeoutMs applies to plain steps: a transactional step is bounded by transaction\.timeout/,
    ],
    [{ compensate: 42 }, /compensate must be the name of a method of the same class, called with the step's arguments and its result/],
    [{ compensate: '' }, /compensate must be the name of a method/],
    [{ compensate: () => 1 }, /compensate must be the name of a method of the same class.*\(got a function\)/],
    [{ compensate: 'rollback' }, /compensate: "rollback" is not a method of this class/],
    [{ compensate: 'charge' }, /compensate names the step itself; name the method that undoes it/],
    [
      { compensation: 'refund' },
      /compensation is not an option \(a step has name, retries, transactional, transaction, timeoutMs, compensate, pivot\)/,
    ],
  ])('@Step(%j) → InvalidOptionsError when the class is defined', (options, message) => {
    const err = errorOf(() => defineStep(options as StepOptions));
    expect(err).toBeInstanceOf(InvalidOptionsError);
    expect(err.message).toMatch(message);
  });

  it('accepts the valid forms', () => {
    for (const options of [
      { timeoutMs: 1 },
      { timeoutMs: 2 ** 31 - 1, retries: 3 },
      { compensate: 'refund' },
      { compensate: 'refund', transactional: true },
    ] as StepOptions[]) {
      expect(() => defineStep(options)).not.toThrow();
    }
  });

  it.each([
    [{ compensate: 'refund' }, /a method name works on @Step\(\) only, Durable\.step\(\) has no class to look it up in/],
    [{ compensate: { run: 1 } }, /compensate\.run must be a function/],
    [
      { compensate: { run: (): number => 1, compensate: (): number => 2 } },
      /compensate\.compensate is not an option \(a compensation has run, retries, transactional, transaction, timeoutMs\)/,
    ],
    [{ compensate: { run: (): number => 1, timeoutMs: -1 } }, /compensate\.timeoutMs must be a number of ms between 1 and/],
    [{ compensate: [] }, /compensate must be a function \(result\) => … that undoes the step, or \{ run, \.\.\.step options \}/],
    [{ timeoutMs: 0 }, /Durable\.step\("pay"\): timeoutMs must be a number of ms/],
  ])('Durable.step("pay", fn, %j) → a rejected InvalidOptionsError, even outside a workflow', async (options, message) => {
    const p = Durable.step('pay', () => 1, options as never);
    await expect(p).rejects.toThrow(InvalidOptionsError);
    await expect(Durable.step('pay', () => 1, options as never)).rejects.toThrow(message);
  });

  it('Durable.progress() and Durable.compensate() outside workflow code are a NotInWorkflowError that says where they work', async () => {
    const progress = errorOf(() => Durable.progress({ done: 1 }));
    expect(progress).toBeInstanceOf(NotInWorkflowError);
    expect(progress.message).toBe('Durable.progress() can only be called inside a step (@Step() or Durable.step).');
    await expect(Durable.compensate()).rejects.toThrow(NotInWorkflowError);
    await expect(Durable.compensate()).rejects.toThrow('Durable.compensate() can only be called inside a running workflow.');
  });

  it('cancel/resume/fork options ({ compensate?: boolean, actor?: string }) are checked: InvalidArgumentError before anything is written', async () => {
    const engine = new DurableEngine({
      registry: new WorkflowRegistry(),
      connection: 'postgresql://127.0.0.1:1/none',
      options: { worker: false },
    });
    for (const opts of [{ compensate: 'yes' }, { compensate: 1 }, null, 'compensate']) {
      const err = await engine.cancel('some-run', opts as never).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(InvalidArgumentError);
      expect((err as InvalidArgumentError).message).toMatch(
        /cancel\(\): the options must be an object \{ compensate\?: boolean, afterPivot\?: 'refuse' \| 'stop', actor\?: string \}/,
      );
    }
    // actor: who asks, recorded in the history
    for (const actor of ['', '   ', 'x'.repeat(201), 42, {}]) {
      for (const call of [
        () => engine.cancel('some-run', { actor } as never),
        () => engine.resume('some-run', { actor } as never),
        () => engine.fork('some-run', 0, { actor } as never),
      ]) {
        const err = await call().catch((e: unknown) => e);
        expect(err).toBeInstanceOf(InvalidArgumentError);
        expect(err).toMatchObject({
          parameter: 'actor',
          message: expect.stringMatching(/option "actor" must be a non-empty string of at most 200/),
        });
      }
    }
    await engine.stop();
  });
});
