import {
  Durable,
  DurableEngine,
  DurableError,
  InvalidArgumentError,
  InvalidOptionsError,
  NoPrimaryError,
  verifyRuns,
  WorkflowRegistry,
  NotInWorkflowError,
  PayloadTooLargeError,
  RunNotFoundError,
  SerializationError,
  Step,
  UnknownWorkflowError,
  WorkflowFailedError,
} from 'nestjs-durable';
import { EngineHarness, STEADY } from '../support/engine-harness.js';
import { runVerifyCommand } from '../../libs/durable/src/cli/verify-command.js';

/**
 * The bad-input catalogue: what a caller or a workflow can get wrong, and the typed error each
 * gets — with nothing half-written (no run left RUNNING, no row for a refused start or message).
 * Complements engine-basics.spec.ts (unknown name on start, bad start ids, a function as input),
 * codec.spec.ts (what the codec refuses), and the other files of this folder.
 */
describe('bad input: the catalogue', () => {
  let h: EngineHarness;
  const LIMIT = 1_000;
  const executions: Record<string, number> = {};
  const count = (name: string) => (executions[name] = (executions[name] ?? 0) + 1);
  class Steps {
    @Step({ retries: 2 }) async huge() {
      count('huge');
      return 'x'.repeat(LIMIT + 1);
    }
    @Step({ retries: 2 }) async circular() {
      count('circular');
      const o: Record<string, unknown> = {};
      o.self = o;
      return o;
    }
    @Step({ retries: { maxAttempts: 2, initialDelayMs: 10 } }) async throwsString() {
      count('throwsString');
      throw 'card declined';
    }
    @Step({ retries: 0 }) async throwsUndefined() {
      count('throwsUndefined');
      throw undefined;
    }
    @Step({ retries: 0 }) async recvInside() {
      return Durable.recv('inside');
    }
  }
  const steps = new Steps();

  beforeAll(async () => {
    h = await EngineHarness.create('catalogue', STEADY);
    h.pool.on('error', () => {}); // see dangling-step.spec.ts
    await h.engine(
      {
        echo: async (input: unknown) => input,
        hugeOutput: async () => 'y'.repeat(LIMIT + 1),
        functionOutput: async () => ({ total: 3, format: () => '3 €' }),
        hugeStep: async () => steps.huge(),
        circularStep: async () => steps.circular(),
        stringThrown: async () => steps.throwsString(),
        undefinedThrown: async () => steps.throwsUndefined(),
        objectThrownByWorkflow: async () => {
          throw { reason: 'out of stock', sku: 42 };
        },
        unknownChild: async () => (await Durable.startChild('noSuchWorkflow', {})).result(),
        badChildTags: async () => Durable.startChild('echo', 1, { tags: 'vip' as never }),
        unknownGroup: async () => Durable.startChildren('noSuchWorkflow', [1, 2]),
        badGroupInputs: async () => Durable.startChildren('echo', 'abc' as never),
        groupWithId: async () => Durable.startChildren('echo', [1], { id: 'mine' } as never),
        badGroupWait: async () => (await Durable.startChildren('echo', [1])).wait({ atLeast: 2 }),
        badGroupPage: async () => (await Durable.startChildren('echo', [1])).results({ limit: 0 }),
        badCompletionsCursor: async () => (await Durable.startChildren('echo', [1])).completions({ after: -1 }),
        badCompletionsPage: async () => (await Durable.startChildren('echo', [1])).completions({ limit: 20_000 }),
        badAsCompletedPage: async () => {
          for await (const o of (await Durable.startChildren('echo', [1])).asCompleted({ pageSize: 1.5 })) return o;
        },
        hugeEvent: async () => Durable.setEvent('report', 'z'.repeat(LIMIT + 1)),
        recvInStep: async () => steps.recvInside(),
        emptyPatchId: async () => Durable.patched(''),
      },
      { maxPayloadBytes: LIMIT },
    );
  });
  afterAll(() => h.close());

  const engine = () => h.engines[0];
  const runs = async () => (await h.query(`SELECT count(*)::int AS n FROM durable_runs`))[0].n;
  /** Runs the workflow to its end; returns the error result() rejected with, and the stored run. */
  async function failedRun(workflow: string, input: unknown = null) {
    const handle = await engine().startRun(workflow, input);
    const err = await handle.result({ timeoutMs: 15_000 }).then(
      () => null,
      (e: unknown) => e,
    );
    return { err: err as WorkflowFailedError, run: (await engine().getRun(handle.id))! };
  }

  describe('unknown workflow names and ids', () => {
    it('startMany with one unknown name inserts none of the runs', async () => {
      const before = await runs();
      const err = await engine()
        .startMany([
          { workflow: 'echo', input: 1 },
          { workflow: 'nope', input: 2 },
        ])
        .catch((e) => e);
      expect(err).toBeInstanceOf(UnknownWorkflowError);
      expect(err.message).toMatch(/No workflow named "nope" is registered\. Known workflows: .*"echo"/);
      expect(await runs()).toBe(before);
    });

    it('a child of an unknown workflow fails the parent with UnknownWorkflowError, and creates no child', async () => {
      const { err, run } = await failedRun('unknownChild');
      expect(err).toBeInstanceOf(WorkflowFailedError);
      expect(run.status).toBe('FAILED');
      expect(run.error).toMatchObject({
        name: 'UnknownWorkflowError',
        message: expect.stringContaining('No workflow named "noSuchWorkflow"'),
      });
      expect(await h.query(`SELECT id FROM durable_runs WHERE parent_id = $1`, [run.id])).toEqual([]);
    });

    it('a child started with bad tags fails the parent with InvalidArgumentError that says what tags may be, and creates no child', async () => {
      const { run } = await failedRun('badChildTags');
      expect(run.error).toMatchObject({
        name: 'InvalidArgumentError',
        message: expect.stringContaining('tags must be an array: pass an array of at most 20 strings'),
      });
      expect(await h.query(`SELECT id FROM durable_runs WHERE parent_id = $1`, [run.id])).toEqual([]);
    });

    it('a group of an unknown workflow fails the parent with UnknownWorkflowError, and creates no child nor group', async () => {
      const { err, run } = await failedRun('unknownGroup');
      expect(err).toBeInstanceOf(WorkflowFailedError);
      expect(run.error).toMatchObject({
        name: 'UnknownWorkflowError',
        message: expect.stringContaining('No workflow named "noSuchWorkflow"'),
      });
      expect(await h.query(`SELECT id FROM durable_runs WHERE parent_id = $1`, [run.id])).toEqual([]);
      expect(await h.query(`SELECT seq FROM durable_child_groups WHERE run_id = $1`, [run.id])).toEqual([]);
    });

    it.each([
      ['badGroupInputs', 'inputs must be an array, or { count, input(index) }'],
      ['groupWithId', 'the option id is not accepted'],
      ['badGroupWait', "atLeast must be an integer from 0 to the group's size (1); got 2"],
      ['badGroupPage', 'limit must be an integer from 1 to 10000; got 0'],
      ['badCompletionsCursor', 'completions(): after must be an integer ≥ 0 (0, or the cursor of the page before); got -1'],
      ['badCompletionsPage', 'completions(): limit must be an integer from 1 to 10000; got 20000'],
      ['badAsCompletedPage', 'asCompleted(): pageSize must be an integer from 1 to 10000; got 1.5'],
    ])('Durable.startChildren misuse (%s) fails the parent with InvalidArgumentError saying what to pass', async (workflow, says) => {
      const { run } = await failedRun(workflow);
      expect(run.error).toMatchObject({ name: 'InvalidArgumentError', message: expect.stringContaining(says) });
    });

    it.each([
      ['empty', ''],
      ['300 characters', 'x'.repeat(300)],
      ['a number', 42],
      ['null', null],
      ['an object', { id: 'r' }],
    ])('a malformed run id (%s): getRun null, the rest a typed error', async (_what, id) => {
      const bad = id as unknown as string;
      expect(await engine().getRun(bad)).toBeNull();
      await expect(engine().cancel(bad)).rejects.toBeInstanceOf(DurableError);
      await expect(engine().resume(bad)).rejects.toBeInstanceOf(DurableError);
      await expect(engine().send(bad, 'topic', 1)).rejects.toBeInstanceOf(RunNotFoundError);
      await expect(engine().handle(bad).result({ timeoutMs: 100 })).rejects.toBeInstanceOf(DurableError);
    });

    it('cancel, resume and result of a well-formed id that does not exist: RunNotFoundError', async () => {
      await expect(engine().cancel('no-such-run')).rejects.toBeInstanceOf(RunNotFoundError);
      await expect(engine().resume('no-such-run')).rejects.toBeInstanceOf(RunNotFoundError);
      await expect(engine().handle('no-such-run').result()).rejects.toThrow(/No run with id "no-such-run"/);
    });
  });

  describe('identifiers with control characters (printed by the CLI and logs, matched in SQL)', () => {
    const controls: [string, string][] = [
      ['ESC (a terminal escape)', 'run-\u001b[2J'],
      ['a newline', 'a\nb'],
      ['NUL', 'a\u0000b'],
      ['DEL', 'a\u007fb'],
      ['a C1 control', 'a\u009bb'],
      ['U+2028', 'a\u2028b'],
      ['a bidi override', 'a\u202eb'],
      ['a bidi isolate', 'a\u2066b'],
      ['a lone surrogate', 'a\ud800b'],
    ];
    const refused = async (call: () => Promise<unknown>, field: string) => {
      const err = await call().then(
        () => null,
        (e: unknown) => e,
      );
      expect(err).toBeInstanceOf(InvalidArgumentError);
      expect(err).toMatchObject({ parameter: field, message: expect.stringContaining(`the ${field} `) });
      expect((err as Error).message).toContain('printable characters only: no control characters');
      // eslint-disable-next-line no-control-regex -- the raw characters must not reach the message
      expect((err as Error).message).not.toMatch(/[\u0000-\u001f\u007f-\u009f\u2028\u202e\u2066]/); // escaped in the message
    };

    it.each(controls)(
      '%s: refused in run ids, tags, queues, keys and topics at start, startMany and send; nothing written',
      async (_what, bad) => {
        const before = await runs();
        await refused(() => engine().startRun('echo', 1, { id: bad }), 'id');
        await refused(() => engine().startRun('echo', 1, { queue: bad }), 'queue');
        await refused(() => engine().startRun('echo', 1, { dedupeKey: bad }), 'dedupeKey');
        await refused(() => engine().startRun(bad, 1), 'workflow name');
        await refused(
          () =>
            engine().startMany([
              { workflow: 'echo', input: 1 },
              { workflow: 'echo', input: 2, options: { id: bad } },
            ]),
          'id',
        );
        const tagErr = await engine()
          .startRun('echo', 1, { tags: ['ok', bad] })
          .catch((e: unknown) => e);
        expect(tagErr).toBeInstanceOf(InvalidArgumentError);
        expect((tagErr as Error).message).toMatch(/tags has an entry with a (control|NUL) character \(U\+[0-9A-F]{4} at position \d+/);
        expect(await runs()).toBe(before);
        await refused(() => engine().send(bad, 'topic', 1), 'runId');
        const handle = await engine().startRun('echo', 1);
        await refused(() => engine().send(handle.id, bad, 1), 'topic');
        await refused(() => engine().send(handle.id, 't', 1, { idempotencyKey: bad }), 'idempotencyKey');
        await refused(() => engine().flowControl.setQueueLimits(bad, { globalConcurrency: 1 }), 'queue');
        await refused(() => engine().flowControl.resetQueueLimits(bad), 'queue');
        expect(await h.query(`SELECT count(*)::int AS n FROM durable_messages`)).toEqual([{ n: 0 }]);
        await handle.result({ timeoutMs: 10_000 });
      },
    );

    it('printable Unicode is fine (accents, CJK, emoji); a queue name at start has a length limit', async () => {
      const handle = await engine().startRun('echo', 1, { id: 'commande-é-注文-📦', tags: ['客户:é'] });
      expect(await handle.result({ timeoutMs: 10_000 })).toBe(1);
      await expect(engine().startRun('echo', 1, { queue: 'q'.repeat(201) })).rejects.toThrow(
        /queue must be a non-empty string of at most 200/,
      );
    });
  });

  describe('payloads over maxPayloadBytes', () => {
    it('an input: PayloadTooLargeError naming the workflow and the limit, nothing written', async () => {
      const before = await runs();
      const err = await engine()
        .startRun('echo', 'é'.repeat(LIMIT))
        .catch((e) => e);
      expect(err).toBeInstanceOf(PayloadTooLargeError);
      expect(err.message).toMatch(
        /input of workflow "echo": the serialized value is \d+ bytes, above the limit of 1000 bytes\. .*raise DurableModule option maxPayloadBytes/,
      );
      expect(await runs()).toBe(before);
    });

    it("a workflow's output: the run FAILED with PAYLOAD_TOO_LARGE naming the output", async () => {
      const { err, run } = await failedRun('hugeOutput');
      expect(err.message).toMatch(/output of run .* \(hugeOutput\): the serialized value is 1003 bytes, above the limit of 1000/);
      expect(run).toMatchObject({ status: 'FAILED', output: null, error: { name: 'PayloadTooLargeError', code: 'PAYLOAD_TOO_LARGE' } });
    });

    it("a step's result: the step fails at once (a retry would return the same), the run FAILED", async () => {
      const { err, run } = await failedRun('hugeStep');
      expect(err.message).toMatch(/step "huge" \(#0\) of run .*: the serialized value is 1003 bytes/);
      expect(run.steps).toEqual([expect.objectContaining({ name: 'huge', status: 'FAILED', attempts: 1 })]);
      expect(executions.huge).toBe(1);
    });

    it('a message: PayloadTooLargeError, no message stored', async () => {
      const handle = await engine().startRun('echo', 1);
      await handle.result({ timeoutMs: 10_000 });
      const err = await engine()
        .send(handle.id, 'big', 'm'.repeat(LIMIT + 1))
        .catch((e) => e);
      expect(err).toBeInstanceOf(PayloadTooLargeError);
      expect(err.message).toContain(`message "big" to run ${handle.id}`);
      expect(await h.query(`SELECT count(*)::int AS n FROM durable_messages`)).toEqual([{ n: 0 }]);
    });

    it('an event value: the run FAILED with PAYLOAD_TOO_LARGE naming the event, nothing published', async () => {
      const { run } = await failedRun('hugeEvent');
      expect(run.error).toMatchObject({ code: 'PAYLOAD_TOO_LARGE', message: expect.stringContaining('event "report" of run') });
      expect(await h.query(`SELECT count(*)::int AS n FROM durable_events WHERE run_id = $1`, [run.id])).toEqual([{ n: 0 }]);
    });
  });

  describe('values that are not data', () => {
    it('a circular step result: the step fails at once with the path, the run FAILED', async () => {
      const { err, run } = await failedRun('circularStep');
      expect(err.message).toMatch(/step "circular" \(#0\) of run .*: cannot store the value at \$\.self: circular reference/);
      expect(run.steps[0]).toMatchObject({ status: 'FAILED', attempts: 1, error: expect.objectContaining({ name: 'SerializationError' }) });
      expect(executions.circular).toBe(1);
    });

    it('a function in the output: the run FAILED naming the path', async () => {
      const { err } = await failedRun('functionOutput');
      expect(err.message).toMatch(/output of run .* \(functionOutput\): cannot store the value at \$\.format: a function is not data/);
    });

    it('a symbol in a message: SerializationError, nothing stored', async () => {
      const handle = await engine().startRun('echo', 2);
      await handle.result({ timeoutMs: 10_000 });
      await expect(engine().send(handle.id, 't', { s: Symbol('x') })).rejects.toBeInstanceOf(SerializationError);
    });
  });

  describe('throwing something that is not an Error', () => {
    it('a step throwing a string is retried per its policy, then stored as NonErrorThrown with the step named', async () => {
      const { err, run } = await failedRun('stringThrown');
      expect(executions.throwsString).toBe(2);
      expect(err.message).toContain('A non-Error value was thrown: card declined');
      expect(run.steps[0]).toMatchObject({
        name: 'throwsString',
        status: 'FAILED',
        attempts: 2,
        error: expect.objectContaining({
          name: 'NonErrorThrown',
          message: 'A non-Error value was thrown: card declined',
          step: 'throwsString',
          seq: 0,
        }),
      });
    });

    it('a step throwing undefined, a workflow throwing a plain object: readable errors, runs FAILED', async () => {
      const a = await failedRun('undefinedThrown');
      expect(a.run.error).toMatchObject({ name: 'NonErrorThrown', message: 'A non-Error value was thrown: undefined' });
      const b = await failedRun('objectThrownByWorkflow');
      expect(b.err.message).toContain('A non-Error value was thrown: {"reason":"out of stock","sku":42}');
      expect(b.run.status).toBe('FAILED');
    });
  });

  describe('durable APIs outside a workflow', () => {
    it.each([
      ['Durable.sleep()', () => Durable.sleep(10)],
      ['Durable.recv()', () => Durable.recv('t')],
      ['Durable.send()', () => Durable.send('r', 't', 1)],
      ['Durable.setEvent()', () => Durable.setEvent('k', 1)],
      ['Durable.startChild()', () => Durable.startChild('echo', 1)],
      ['Durable.startChildren()', () => Durable.startChildren('echo', [1])],
      ['Durable.runId()', async () => Durable.runId()],
      ['Durable.signal()', async () => Durable.signal()],
      ['Durable.tx()', async () => Durable.tx()],
      ['Durable.patched()', () => Durable.patched('fraud-check')],
    ])('%s → NotInWorkflowError saying where it may be called', async (api, call) => {
      const err = await call().then(
        () => null,
        (e: unknown) => e,
      );
      expect(err).toBeInstanceOf(NotInWorkflowError);
      expect((err as Error).message).toContain(`${api} can only be called inside`);
    });

    it('a step called outside any workflow is a plain method call (nothing recorded)', async () => {
      const before = await h.query(`SELECT count(*)::int AS n FROM durable_steps`);
      await expect(steps.throwsString()).rejects.toBe('card declined');
      expect(await h.query(`SELECT count(*)::int AS n FROM durable_steps`)).toEqual(before);
    });

    it('a durable wait inside a step (which may run twice) fails the run with NotInWorkflowError naming the step', async () => {
      const { run } = await failedRun('recvInStep');
      expect(run.error).toMatchObject({
        name: 'NotInWorkflowError',
        message: expect.stringContaining('not inside a step (step "recvInside"'),
      });
    });
  });

  describe('versioning', () => {
    const engineWith = (options: Record<string, unknown>) => () =>
      new DurableEngine({ registry: new WorkflowRegistry(), connection: h.db.url, options: options as never });

    it('runVersions without appVersion, or not a list of versions: InvalidOptionsError saying what to pass', () => {
      expect(engineWith({ runVersions: 'own' })).toThrow(InvalidOptionsError);
      expect(engineWith({ runVersions: ['1.4'] })).toThrow(/runVersions \["1.4"\] needs appVersion \(the version of this build/);
      expect(engineWith({ appVersion: '2', runVersions: 'mine' })).toThrow(
        /runVersions must be 'any', 'own' or a list of app versions \(non-empty strings\), got "mine"/,
      );
      expect(engineWith({ appVersion: '2', runVersions: ['1', ''] })).toThrow(/runVersions must be/);
    });

    it('Durable.patched() with an empty id: the run FAILED with InvalidArgumentError naming the id', async () => {
      const { run } = await failedRun('emptyPatchId');
      expect(run.error).toMatchObject({
        name: 'InvalidArgumentError',
        message: expect.stringContaining('Durable.patched(): the id must be a non-empty string'),
      });
    });

    it('verify with a page size or window out of range: InvalidOptionsError, nothing read', async () => {
      await expect(verifyRuns(new WorkflowRegistry(), h.db.url, { pageSize: 0 })).rejects.toThrow(
        /pageSize must be an integer from 1 to 10000 \(got 0\)/,
      );
      await expect(verifyRuns(new WorkflowRegistry(), h.db.url, { finishedWithinMs: -5 })).rejects.toThrow(
        /finishedWithinMs must be a number of ms/,
      );
    });

    it('npx nestjs-durable verify without --module, with a missing file or a bad duration: exit 2 and what to pass', async () => {
      const run = async (args: string[]) => {
        let err = '';
        const code = await runVerifyCommand(args, { cwd: process.cwd(), out: () => {}, err: (t) => (err += t) });
        return { code, err };
      };
      expect(await run([])).toMatchObject({
        code: 2,
        err: expect.stringContaining('--module is required: the compiled root module of the app'),
      });
      expect(await run(['--module', 'dist/nowhere.module.js'])).toMatchObject({
        code: 2,
        err: expect.stringContaining('nowhere.module.js'),
      });
      expect(await run(['--module', 'x.js', '--finished-within', 'a week'])).toMatchObject({
        code: 2,
        err: expect.stringContaining('"a week" is not a duration (e.g. 30m, 24h, 7d)'),
      });
      expect(await run(['--nope'])).toMatchObject({ code: 2, err: expect.stringContaining("Unknown option '--nope'") });
    });
  });

  describe('connection URLs', () => {
    it('a host list it cannot read, or target_session_attrs that would write to a standby: InvalidOptionsError saying what to write', () => {
      const engine = (connection: string) => () => new DurableEngine({ registry: new WorkflowRegistry(), connection });
      expect(engine('postgresql://u:secret@db1,:5432/app')).toThrow(
        /host ":5432" that is not host or host:port \(in postgresql:\/\/u:\*\*\*@/,
      );
      expect(engine('postgresql://db1,db2/app?target_session_attrs=any')).toThrow(InvalidOptionsError);
      expect(engine('postgresql://db/app?target_session_attrs=standby')).toThrow(/the engine writes, so it needs the primary/);
    });

    it('no primary among the hosts: NoPrimaryError naming what each host answered, retryable', async () => {
      const e = new DurableEngine({
        registry: new WorkflowRegistry(),
        connection: 'postgresql://postgres@127.0.0.1:1,127.0.0.1:2/app',
        options: { worker: false, logLevel: 'silent' },
      });
      const err = await e.start().then(
        () => null,
        (x: unknown) => x,
      );
      await e.stop();
      expect(err).toBeInstanceOf(NoPrimaryError);
      expect((err as NoPrimaryError).message).toMatch(
        /No primary among the database hosts: 127\.0\.0\.1:1 \(.*ECONNREFUSED.*\), 127\.0\.0\.1:2/,
      );
    });
  });

  describe('at the end', () => {
    it('no run is left half-written: every run of this file ended', async () => {
      expect(await h.query(`SELECT id, status FROM durable_runs WHERE status NOT IN ('SUCCEEDED', 'FAILED')`)).toEqual([]);
    });
  });
});
