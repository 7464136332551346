import {
  CallbackRefusedError,
  CallbackTimeoutError,
  defineSignal,
  Durable,
  DurableEngine,
  IllegalTransitionError,
  InvalidArgumentError,
  InvalidOptionsError,
  RunNotFoundError,
  SignalNotTakenError,
  WorkflowRegistry,
  type DurableCallback,
} from 'nestjs-durable';
import { eventually, FAST } from '../support/engine-harness.js';
import { signalWaits } from '../../libs/durable/src/store/signal-waits.js';
import { DATABASES, openDatabase, type KindDatabase } from '../support/databases.js';

const SECRET = 'a-test-secret-of-at-least-32-bytes-long!';

/** A payment provider's answer: checked by a function (a schema library's parse would do the same). */
const PaymentResult = defineSignal<{ status: 'paid' | 'declined'; amount: number }>('payment.result', {
  payload: (body) => {
    const b = body as { status?: unknown; amount?: unknown };
    if ((b?.status !== 'paid' && b?.status !== 'declined') || typeof b.amount !== 'number')
      throw new Error('expected { status: "paid" | "declined", amount: number }');
    return { status: b.status, amount: b.amount };
  },
});
const Approval = defineSignal<{ approved: boolean; by: string }>('refund.approval');

/**
 * Callback URLs and signals on every database the engine supports: a callback resumes the run with
 * the POSTed body once; a forged, expired, reused or late token is refused with nothing written; a
 * signal reaches Durable.waitForSignal with its payload checked.
 */
describe.each(DATABASES)('callbacks and signals on %s', (kind) => {
  let db: KindDatabase;
  const engines: DurableEngine[] = [];
  /** URLs the workflows handed out (a stand-in for the third party that receives them). */
  const handedOut = new Map<string, DurableCallback<any>>();

  const workflows: Record<string, (input: any) => Promise<unknown>> = {
    pay: async (input: { timeoutMs: number; typed?: boolean }) => {
      const cb = await Durable.callback({ timeoutMs: input.timeoutMs, signal: input.typed ? PaymentResult : undefined });
      await Durable.step('hand over', async () => void handedOut.set(Durable.runId(), cb));
      try {
        return { got: await cb.wait() };
      } catch (err) {
        if (err instanceof CallbackTimeoutError) return { timedOut: true };
        throw err;
      }
    },
    payAndHold: async () => {
      const cb = await Durable.callback({ timeoutMs: 60_000 });
      await Durable.step('hand over', async () => void handedOut.set(Durable.runId(), cb));
      const body = await cb.wait();
      await Durable.recv('finish', { timeoutMs: 30_000 });
      return body;
    },
    approve: async () => {
      const decision = await Durable.waitForSignal(Approval, { timeoutMs: 30_000 });
      return decision;
    },
    noSecret: async () => Durable.callback({ timeoutMs: 1000 }),
    takesPayments: async () => Durable.waitForSignal(PaymentResult, { timeoutMs: 30_000 }),
  };

  async function engine(callbacks: boolean = true): Promise<DurableEngine> {
    const registry = new WorkflowRegistry();
    for (const [name, run] of Object.entries(workflows))
      registry.register({
        name,
        queue: 'default',
        options: name === 'takesPayments' ? { signals: [PaymentResult] } : name === 'approve' ? { signals: [Approval] } : {},
        run,
      });
    const e = new DurableEngine({
      registry,
      connection: db.url,
      prisma: db.prisma,
      options: {
        ...FAST,
        inMemoryWaitMaxMs: 200,
        signals: [PaymentResult, Approval],
        ...(callbacks ? { callbacks: { secret: SECRET, baseUrl: 'https://shop.example.com' } } : {}),
      },
    });
    engines.push(e);
    await e.start();
    return e;
  }
  const messages = async (runId: string) =>
    Number((await db.query<{ n: unknown }>('SELECT count(*) AS n FROM durable_messages WHERE run_id = ?', [runId]))[0].n);
  const handed = async (runId: string): Promise<DurableCallback<any>> =>
    (await eventually(async () => handedOut.get(runId), 10_000, 'the callback URL to be handed out'))!;

  beforeAll(async () => {
    db = await openDatabase(kind, `callbacks_${kind}`);
  });
  afterEach(async () => {
    for (const e of engines.splice(0)) await e.stop().catch(() => {});
  });
  afterAll(() => db.close());

  it('a callback URL resumes the run with the body; once the run ended the URL is refused, nothing written', async () => {
    const e = await engine();
    const h = await e.startRun('pay', { timeoutMs: 60_000 });
    const cb = await handed(h.id);
    expect(cb.url).toBe(`https://shop.example.com/durable/callbacks/${cb.token}`);
    expect(cb.token).toMatch(/^[\w-]+\.[0-9a-f]{32}\.[0-9a-z]+\.[\w-]*\.[\w-]{43}$/);
    await eventually(async () => (await e.getRun(h.id))!.status === 'WAITING', 10_000, 'the run to suspend');
    expect(await e.completeCallback(cb.token, { paid: 42 })).toEqual({ runId: h.id, duplicate: false });
    expect(await h.result({ timeoutMs: 10_000 })).toEqual({ got: { paid: 42 } });
    await expect(e.completeCallback(cb.token, { paid: 42 })).rejects.toMatchObject({ reason: 'ended' });
    expect(await messages(h.id)).toBe(1);
  });

  it('a retry of the same body while the run goes on is accepted once; another body is refused as used', async () => {
    const e = await engine();
    const h = await e.startRun('payAndHold', null);
    const cb = await handed(h.id);
    expect(await e.completeCallback(cb.token, { a: 1, b: [1, 2] })).toEqual({ runId: h.id, duplicate: false });
    expect(await e.completeCallback(cb.token, { b: [1, 2], a: 1 })).toEqual({ runId: h.id, duplicate: true });
    const used = e.completeCallback(cb.token, { a: 2 });
    await expect(used).rejects.toBeInstanceOf(CallbackRefusedError);
    await expect(used).rejects.toMatchObject({ reason: 'used' });
    expect(await messages(h.id)).toBe(1);
    await e.send(h.id, 'finish', null);
    expect(await h.result({ timeoutMs: 10_000 })).toEqual({ a: 1, b: [1, 2] });
  });

  it('forged, altered and expired tokens are refused, and nothing is written', async () => {
    const e = await engine();
    const h = await e.startRun('pay', { timeoutMs: 60_000 });
    const cb = await handed(h.id);
    const [run, id, exp, sig, mac] = cb.token.split('.');
    const forged = [
      'not-a-token',
      '',
      `${run}.${id}.${exp}.${sig}.${'A'.repeat(43)}`, // a made-up signature
      `${run}.${id}.${(parseInt(exp, 36) + 3_600_000).toString(36)}.${sig}.${mac}`, // a later expiry
      `${Buffer.from('another-run').toString('base64url')}.${id}.${exp}.${sig}.${mac}`, // another run
    ];
    for (const token of forged) {
      const err = await e.completeCallback(token, { paid: 1 }).catch((x: unknown) => x);
      expect(err).toBeInstanceOf(CallbackRefusedError);
      expect(err).toMatchObject({ reason: 'invalid', code: 'CALLBACK_REFUSED' });
      expect(String((err as Error).message)).not.toContain(mac);
    }
    const short = await e.startRun('pay', { timeoutMs: 300 });
    const late = await handed(short.id);
    expect(await short.result({ timeoutMs: 10_000 })).toEqual({ timedOut: true });
    await expect(e.completeCallback(late.token, { paid: 1 })).rejects.toMatchObject({ reason: 'expired' });
    expect(await messages(h.id)).toBe(0);
    expect(await messages(short.id)).toBe(0);
    await e.cancel(h.id);
  });

  it("a typed callback's body is checked before it is accepted", async () => {
    const e = await engine();
    const h = await e.startRun('pay', { timeoutMs: 60_000, typed: true });
    const cb = await handed(h.id);
    await expect(e.completeCallback(cb.token, { status: 'maybe' })).rejects.toBeInstanceOf(InvalidArgumentError);
    expect(await messages(h.id)).toBe(0);
    await e.completeCallback(cb.token, { status: 'paid', amount: 1200, extra: 'dropped by the check' });
    expect(await h.result({ timeoutMs: 10_000 })).toEqual({ got: { status: 'paid', amount: 1200 } });
  });

  it('a signal reaches the run that waits for it; to an ended run or with a bad name it is refused', async () => {
    const e = await engine();
    const h = await e.startRun('approve', null);
    // Suspended in its wait: the admin API's list of runs waiting for a signal names it (both dialects' statement).
    await eventually(
      async () => (await signalWaits(e.storeForTools, 100)).some((w) => w.runId === h.id),
      10_000,
      'the run listed as waiting',
    );
    expect((await signalWaits(e.storeForTools, 100)).find((w) => w.runId === h.id)).toMatchObject({
      workflowName: 'approve',
      signal: 'refund.approval',
    });
    await e.sendSignal(h.id, Approval, { approved: true, by: 'manager@shop' });
    expect(await h.result({ timeoutMs: 10_000 })).toEqual({ approved: true, by: 'manager@shop' });
    await expect(e.sendSignal(h.id, 'refund.approval', { approved: false, by: 'late' })).rejects.toBeInstanceOf(IllegalTransitionError);
    await expect(e.sendSignal('no-such-run', Approval, { approved: true, by: 'x' })).rejects.toBeInstanceOf(RunNotFoundError);
    await expect(e.sendSignal(h.id, 'no.such.signal', {})).rejects.toThrow(/No signal named "no.such.signal"/);
    expect(() => defineSignal('bad name with spaces')).toThrow(/part of a URL/);
    // A workflow that declares its signals takes those only: nothing is stored for another.
    const payments = await e.startRun('takesPayments', null);
    const refused = e.sendSignal(payments.id, Approval, { approved: true, by: 'x' });
    await expect(refused).rejects.toBeInstanceOf(SignalNotTakenError);
    await expect(refused).rejects.toThrow(/does not take signal "refund.approval": its workflow declares "payment.result"/);
    expect(await messages(payments.id)).toBe(0);
    await e.sendSignal(payments.id, PaymentResult, { status: 'paid', amount: 5 });
    // A workflow that declares no signal takes none.
    const other = await e.startRun('payAndHold', null);
    await expect(e.sendSignal(other.id, Approval, { approved: true, by: 'x' })).rejects.toThrow(
      /declares no signal in @Workflow\(\{ signals \}\)/,
    );
    await e.cancel(other.id);
    expect(await payments.result({ timeoutMs: 10_000 })).toEqual({ status: 'paid', amount: 5 });
  });

  it('without the callbacks option Durable.callback() fails the run with a typed error saying what to set', async () => {
    const e = await engine(false);
    const h = await e.startRun('noSecret', null);
    await expect(h.result({ timeoutMs: 10_000 })).rejects.toThrow(/needs the engine option callbacks: \{ secret \}/);
    await expect(e.completeCallback('x', {})).rejects.toBeInstanceOf(InvalidOptionsError);
    expect(
      () => new DurableEngine({ registry: new WorkflowRegistry(), connection: db.url, options: { callbacks: { secret: 'short' } } }),
    ).toThrow(/callbacks.secret must be a string or Buffer of at least 32 bytes/);
  });
});
