import { Controller, HttpCode, Inject, Post } from '@nestjs/common';
import { WorkflowClient } from 'nestjs-durable';

/** The signed-in customer's own views (header x-customer: see CustomerContextMiddleware). */
@Controller('customers/me')
export class CustomersController {
  constructor(@Inject(WorkflowClient) private readonly workflows: WorkflowClient) {}

  /** POST /customers/me/summary → the customer's orders by status, from a run that kept the request's customer. */
  @Post('summary')
  @HttpCode(200)
  async summary() {
    const handle = await this.workflows.start('customerSummary', {});
    const summary = (await handle.result({ timeoutMs: 10_000 })) as { customer: string; orders: Record<string, number> };
    return { runId: handle.id, ...summary };
  }
}
