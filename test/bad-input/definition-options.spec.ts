import { DurableEngine, InvalidOptionsError, Step, WorkflowRegistry, type StepOptions, type WorkflowOptions } from 'nestjs-durable';

/**
 * Options of @Step(), @Workflow() (WorkflowRegistry.register) and the module's stepRetries out of
 * range: an InvalidOptionsError when the class is defined / the app starts, naming the method and
 * every problem. Before: `retries: -1` ran the step once without a word, a NaN back-off retried at
 * once, a typo (`maxAttemps`) was ignored, a fractional priority failed every start in Postgres.
 */
describe('bad input: step and workflow options out of range', () => {
  const defineStep = (options: StepOptions) => {
    class Payments {
      @Step(options) async charge() {
        return 1;
      }
    }
    return Payments;
  };

  it.each([
    [{ retries: -1 }, /@Step\(\) on Payments\.charge\(\): retries must be a whole number of retries between 0 and 1000/],
    [{ retries: 1.5 }, /retries must be a whole number/],
    [{ retries: '3' }, /retries must be a number of retries or a RetryPolicy object \(got "3"\)/],
    [{ retries: { maxAttemps: 5 } }, /retries has no option "maxAttemps" \(a RetryPolicy has maxAttempts, initialDelayMs/],
    [{ retries: { maxAttempts: 0 } }, /retries\.maxAttempts must be a whole number between 1 and 1001/],
    [
      { retries: { initialDelayMs: Number.NaN, backoffFactor: 0.5 } },
      /initialDelayMs must be between 0 and 86400000 ms \(got null\); retries\.backoffFactor must be a number between 1 and 100/,
    ],
    [{ retries: { retryIf: true } }, /retries\.retryIf must be a function/],
    [{ name: '' }, /name must be a non-empty string/],
    [{ transactional: 'yes' }, /transactional must be true or false/],
    [{ transaction: { timeout: 5_000 } }, /transaction options apply only to a step marked transactional: true/],
    [
      { transactional: true, transaction: { timeout: -1, isolationLevel: 'Chaos' } },
      /transaction\.timeout must be a whole number of ms ≥ 1 .*isolationLevel must be one of ReadUncommitted/,
    ],
  ])('@Step(%j) → InvalidOptionsError when the class is defined', (options, message) => {
    let err: unknown;
    try {
      defineStep(options as StepOptions);
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(InvalidOptionsError);
    expect((err as Error).message).toMatch(message);
  });

  it('accepts every valid form', () => {
    for (const options of [
      {},
      { retries: 0 },
      { retries: 1000 },
      { retries: { maxAttempts: 5, initialDelayMs: 0, backoffFactor: 1, maxDelayMs: 10, retryIf: () => true } },
      { transactional: true, transaction: { timeout: 30_000, maxWait: 5_000, isolationLevel: 'Serializable' } },
    ] as StepOptions[]) {
      expect(() => defineStep(options)).not.toThrow();
    }
  });

  it.each([
    [{ priority: 1.5 }, /workflow "orders": priority must be a whole number between -1000000 and 1000000/],
    [{ timeoutMs: 0 }, /timeoutMs must be a number of ms between 1 and/],
    [{ timeoutMs: Number.POSITIVE_INFINITY }, /timeoutMs must be a number of ms/],
    [{ deleteOnSuccess: 'yes' }, /deleteOnSuccess must be true \(a run that succeeds is deleted at its end\) or false \(got "yes"\)/],
  ])('@Workflow(%j) → InvalidOptionsError when registered', (options, message) => {
    const registry = new WorkflowRegistry();
    const register = () => registry.register({ name: 'orders', queue: 'default', options: options as WorkflowOptions, run: async () => 1 });
    expect(register).toThrow(InvalidOptionsError);
    expect(register).toThrow(message);
    expect(registry.names()).toEqual([]);
  });

  it('a workflow needs a name and a queue', () => {
    const registry = new WorkflowRegistry();
    expect(() => registry.register({ name: '', queue: 'default', options: {}, run: async () => 1 })).toThrow(
      /name must be a non-empty string/,
    );
    expect(() => registry.register({ name: 'x', queue: '', options: {}, run: async () => 1 })).toThrow(/queue must be a non-empty string/);
  });

  it('the module option stepRetries is checked with the other engine options', () => {
    const make = () =>
      new DurableEngine({
        registry: new WorkflowRegistry(),
        connection: 'postgresql://127.0.0.1:1/none',
        options: { stepRetries: { maxAttempts: 0, maxDelayMs: -5 } },
      });
    expect(make).toThrow(InvalidOptionsError);
    expect(make).toThrow(
      /Invalid nestjs-durable options: stepRetries\.maxAttempts must be a whole number between 1 and 1001.*stepRetries\.maxDelayMs must be between 0/,
    );
  });
});
