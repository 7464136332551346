import { Controller, HttpCode, Inject, Post, Query, UseGuards } from '@nestjs/common';
import { WorkflowClient } from 'nestjs-durable';
import { AdminTokenGuard } from '../admin/admin-token.guard.js';

/** Maintenance for operators (the admin token): data migrations run as durable backfills. */
@Controller('maintenance')
@UseGuards(AdminTokenGuard)
export class MaintenanceController {
  constructor(@Inject(WorkflowClient) private readonly workflows: WorkflowClient) {}

  /**
   * POST /maintenance/recompute-totals[?dryRun=true] → 202 { runId }: recomputes every order's amount.
   * Under one id per day: asking again the same day returns the same backfill instead of a second one.
   */
  @Post('recompute-totals')
  @HttpCode(202)
  async recomputeTotals(@Query('dryRun') dryRun?: string) {
    const day = new Date().toISOString().slice(0, 10);
    const dry = dryRun === 'true';
    const handle = await this.workflows.start(
      'recomputeOrderTotals',
      { dryRun: dry },
      { id: `recompute-totals-${day}${dry ? '-dry' : ''}` },
    );
    return { runId: handle.id, outcome: handle.outcome };
  }
}
