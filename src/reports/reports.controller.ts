import { Body, Controller, HttpCode, Inject, Post } from '@nestjs/common';
import { WorkflowClient } from 'nestjs-durable';
import { parseReportDay } from './report-day.js';

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
    const day = parseReportDay(body);
    const run = await this.workflows.start('salesReport', { day }, { id: `sales-report:${day}` });
    return { runId: run.id, day };
  }
}
