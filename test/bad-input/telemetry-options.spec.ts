import { DurableEngine, InvalidArgumentError, InvalidOptionsError, WorkflowRegistry, type EngineOptions } from 'nestjs-durable';

/**
 * The telemetry, hooks, logLevel and context options, and engine.onEvent()'s arguments: an error naming the
 * option and what to write instead, before anything connects.
 */
describe('bad input: telemetry, hooks, log level and context', () => {
  const make = (options: unknown) => () =>
    new DurableEngine({ registry: new WorkflowRegistry(), connection: 'postgresql://127.0.0.1:1/none', options: options as EngineOptions });

  it.each([
    [{ telemetry: true }, /telemetry must be an object with some of: traces, metrics, figuresMinIntervalMs/],
    [{ telemetry: { trace: false } }, /telemetry\.trace is not an option \(traces, metrics, figuresMinIntervalMs\)/],
    [{ telemetry: { metrics: 'yes' } }, /telemetry\.metrics must be true or false/],
    [{ telemetry: { figuresMinIntervalMs: -1 } }, /telemetry\.figuresMinIntervalMs must be an integer of 0 or more \(got -1\)/],
    [{ hooks: { pollIntervalMs: 0 } }, /hooks\.pollIntervalMs must be an integer of 10 or more/],
    [{ hooks: { batchSize: 2.5 } }, /hooks\.batchSize must be an integer of 1 or more/],
    [{ hooks: { lease: 10 } }, /hooks\.lease is not an option/],
    [{ logLevel: 'verbose' }, /logLevel must be one of debug, log, warn, error, silent \(got "verbose"\)/],
    [{ context: () => 'acme' }, /context must be an object with some of: capture, restore, required, settings/],
    [{ context: { capture: 'tenant' } }, /context\.capture must be a function \(got string\)/],
    [{ context: { restor: () => null } }, /context\.restor is not an option \(capture, restore, required, settings\)/],
    [{ context: { required: 'yes' } }, /context\.required must be true or false/],
    [{ context: { settings: { 'app.tenant_id': 'x' } } }, /context\.settings must be a function/],
  ])('%j → InvalidOptionsError', (options, message) => {
    expect(make(options)).toThrow(InvalidOptionsError);
    expect(make(options)).toThrow(message);
  });

  it('onEvent: unknown types, a missing handler or consumer → InvalidArgumentError naming what to pass', async () => {
    const engine = make({})();
    expect(() => engine.onEvent(['run.failed', 'run.done' as never], () => {}, { consumer: 'c' })).toThrow(InvalidArgumentError);
    expect(() => engine.onEvent(['run.failed', 'run.done' as never], () => {}, { consumer: 'c' })).toThrow(
      /unknown event type "run.done"; use run.succeeded, run.failed, run.cancelled, step.retried, lease.lost/,
    );
    expect(() => engine.onEvent([], () => {}, { consumer: 'c' })).toThrow(/unknown event type \(none given\)/);
    expect(() => engine.onEvent('run.failed', 'handler' as never, { consumer: 'c' })).toThrow(/the handler must be a function/);
    expect(() => engine.onEvent('run.failed', () => {}, undefined as never)).toThrow(/\{ consumer \} must be a non-empty string/);
    expect(() => engine.onEvent('run.failed', () => {}, { consumer: 'x'.repeat(300) })).toThrow(/at most 256 characters/);
    await engine.stop();
  });

  it('logLevel drops what is below it', () => {
    const lines: string[] = [];
    const logger = {
      log: (m: string) => lines.push(`log ${m}`),
      warn: (m: string) => lines.push(`warn ${m}`),
      error: (m: string) => lines.push(`error ${m}`),
      debug: (m: string) => lines.push(`debug ${m}`),
    };
    const engine = make({ logger, logLevel: 'warn' })();
    const l = engine.options.logger;
    l.debug?.('a');
    l.log('b');
    l.warn('c');
    l.error('d');
    expect(lines).toEqual(['warn c', 'error d']);
    void engine.stop();
  });
});
