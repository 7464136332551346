import { Inject, Injectable } from '@nestjs/common';
import { Durable, Step, Workflow } from 'nestjs-durable';
import type { Prisma } from '../generated/prisma/client.js';
import { customerContext, type CustomerContext } from './customer-context.js';

/**
 * A tenant-aware workflow: it takes no customer in its input. The run keeps the customer of the
 * request that started it (the module option `context`) and every step gets it back, on whichever
 * instance runs it and after any crash: from Durable.context(), and restored in customerContext as
 * the app's own code expects it.
 */
@Injectable()
export class CustomerSummarySteps {
  /** Counts the customer's orders by status, in one transaction. */
  @Step({ transactional: true })
  async ordersByStatus(): Promise<Record<string, number>> {
    const { customer } = Durable.context<CustomerContext>()!;
    const tx = Durable.tx<Prisma.TransactionClient>();
    const groups = await tx.order.groupBy({ by: ['status'], where: { customer }, _count: { _all: true } });
    return Object.fromEntries(groups.map((g) => [g.status, g._count._all]));
  }
}

@Injectable()
export class CustomerSummaryWorkflow {
  constructor(@Inject(CustomerSummarySteps) private readonly steps: CustomerSummarySteps) {}

  @Workflow({ name: 'customerSummary' })
  async summary(): Promise<{ customer: string; orders: Record<string, number> }> {
    const orders = await this.steps.ordersByStatus();
    // The app's own request context holds inside the run too (restored by the context option).
    return { customer: customerContext.getStore()!.customer, orders };
  }
}
