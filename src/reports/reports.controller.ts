import { BadRequestException, Body, Controller, HttpCode, Inject, Post } from '@nestjs/common';
import { WorkflowClient } from 'nestjs-durable';

const DAY = /^\d{4}-\d{2}-\d{2}$/;

@Controller('reports')
export class ReportsController {
  constructor(@Inject(WorkflowClient) private readonly workflows: WorkflowClient) {}

  /**
   * POST /reports { day?: "YYYY-MM-DD" } (default today, UTC) → 202 { runId }. One run per day: the
   * run id is derived from the day, so asking twice returns the same run.
   */
  @Post()
  @HttpCode(202)
  async create(@Body() body: unknown) {
    const raw = (body as { day?: unknown } | null)?.day ?? new Date().toISOString().slice(0, 10);
    if (typeof raw !== 'string' || !DAY.test(raw) || Number.isNaN(Date.parse(`${raw}T00:00:00Z`))) {
      throw new BadRequestException(['day must be a date written YYYY-MM-DD']);
    }
    const run = await this.workflows.start('salesReport', { day: raw }, { id: `sales-report:${raw}` });
    return { runId: run.id, day: raw };
  }
}
