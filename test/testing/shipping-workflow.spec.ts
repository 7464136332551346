// The test a new user writes from docs/testing.md ("A complete test file"): a workflow that books a
// courier (a flaky call, retried) and then waits up to 7 days for the delivery, on the embedded
// Postgres. The last test proves the same assertions fail when the workflow's logic is broken.
import { Inject, Injectable, Module, type OnApplicationShutdown } from '@nestjs/common';
import { PrismaPg } from '@prisma/adapter-pg';
import { Durable, DurableModule, Step, Workflow } from 'nestjs-durable';
import { createDurableTestingModule, StepSequenceMismatchError, type DurableTestingModule } from 'nestjs-durable/testing';
import { PrismaClient } from '../../src/generated/prisma/client.js';

@Injectable()
class PrismaService extends PrismaClient implements OnApplicationShutdown {
  constructor() {
    super({ adapter: new PrismaPg({ connectionString: process.env.DATABASE_URL! }) });
  }
  async onApplicationShutdown() {
    await this.$disconnect();
  }
}

/** The courier's API: in production an HTTP call that fails now and then. */
@Injectable()
export class CourierApi {
  async book(orderId: string): Promise<string> {
    return `BOOKING-${orderId}`;
  }
}

@Injectable()
export class ShippingSteps {
  constructor(@Inject(CourierApi) private readonly courier: CourierApi) {}

  @Step({ retries: 3 })
  bookCourier(orderId: string): Promise<string> {
    return this.courier.book(orderId);
  }

  @Step()
  async reportLost(orderId: string): Promise<string> {
    return `claim filed for ${orderId}`;
  }
}

const WEEK_MS = 7 * 24 * 3600_000;

@Injectable()
export class ShippingWorkflow {
  constructor(@Inject(ShippingSteps) private readonly steps: ShippingSteps) {}

  @Workflow({ name: 'shipOrder' })
  async ship(input: { orderId: string }) {
    const booking = await this.steps.bookCourier(input.orderId);
    const delivery = await Durable.recv<{ signedBy: string }>('delivered', { timeoutMs: WEEK_MS });
    if (!delivery) return { status: 'LOST', booking, claim: await this.steps.reportLost(input.orderId) };
    return { status: 'DELIVERED', booking, signedBy: delivery.signedBy };
  }

  /** The same workflow with a bug: it waits one day instead of seven and files no claim. */
  @Workflow({ name: 'shipOrderBroken' })
  async shipBroken(input: { orderId: string }) {
    const booking = await this.steps.bookCourier(input.orderId);
    const delivery = await Durable.recv<{ signedBy: string }>('delivered', { timeoutMs: WEEK_MS / 7 });
    return delivery ? { status: 'DELIVERED', booking, signedBy: delivery.signedBy } : { status: 'LOST', booking };
  }
}

@Module({
  imports: [DurableModule.forRoot({ prisma: PrismaService })],
  providers: [PrismaService, CourierApi, ShippingSteps, ShippingWorkflow],
})
class ShippingModule {}

describe('shipOrder (nestjs-durable/testing on the embedded Postgres)', () => {
  let t: DurableTestingModule;
  const started = Date.now();
  const courier = { book: async (orderId: string) => `BOOKING-${orderId}` }; // a stand-in for the real API

  beforeAll(async () => {
    t = await createDurableTestingModule(
      { imports: [ShippingModule] },
      { database: 'embedded', override: (b) => b.overrideProvider(CourierApi).useValue(courier) },
    );
  });
  afterAll(async () => {
    await t?.close();
    console.log(`shipping-workflow.spec: ${Date.now() - started} ms from the first line to the database dropped (server start included)`);
  });
  afterEach(() => t.clearFaults());

  it('is delivered: the courier fails twice, is retried, and the delivery message ends the run', async () => {
    t.failStep('bookCourier', { attempts: [1, 2], error: new Error('courier API: 503') });
    const run = await t.start('shipOrder', { orderId: 'o-1' });
    await t.waitFor(run.id, { status: 'WAITING', step: 'durable.recv:delivered' });
    await t.send(run.id, 'delivered', { signedBy: 'Ada' });
    expect(await t.result(run.id)).toEqual({ status: 'DELIVERED', booking: 'BOOKING-o-1', signedBy: 'Ada' });
    await t.expectSteps(run.id, [{ name: 'bookCourier', status: 'SUCCEEDED', attempts: 3 }]);
  });

  it('is lost: nothing for a week (virtual time), so a claim is filed', async () => {
    const run = await t.start('shipOrder', { orderId: 'o-2' });
    await t.advanceTime('6d');
    expect((await t.run(run.id)).status).toBe('WAITING'); // six days: still waiting
    await t.advanceTime('1d');
    expect(await t.result(run.id)).toEqual({ status: 'LOST', booking: 'BOOKING-o-2', claim: 'claim filed for o-2' });
    await t.expectSteps(run.id, ['bookCourier', 'reportLost']);
  });

  it('fails when the courier never answers: retries exhausted', async () => {
    t.failStep('bookCourier', { attempts: 'all' });
    const run = await t.start('shipOrder', { orderId: 'o-3' });
    await expect(t.result(run.id)).rejects.toThrow(/fault injected .* "bookCourier", attempt 4/);
    await t.expectSteps(run.id, [{ name: 'bookCourier', status: 'FAILED', attempts: 4 }]);
  });

  it('the same assertions fail on a broken workflow (it gives up after one day and files no claim)', async () => {
    // The body of 'is lost' against the broken workflow: each of its checks now fails, readably.
    const run = await t.start('shipOrderBroken', { orderId: 'o-4' });
    await t.advanceTime('6d');
    expect((await t.run(run.id)).status).not.toBe('WAITING'); // it gave up after one day
    await t.advanceTime('1d');
    expect(await t.result(run.id)).not.toEqual({ status: 'LOST', booking: 'BOOKING-o-4', claim: 'claim filed for o-4' });
    const failure = await t.expectSteps(run.id, ['bookCourier', 'reportLost']).catch((e: unknown) => e);
    expect(failure).toBeInstanceOf(StepSequenceMismatchError);
    expect((failure as Error).message).toContain('differs from the expected steps at position 1');
    expect((failure as Error).message).toMatch(/✗\s+1\s+reportLost\s+\(none\)/);
  });
});
