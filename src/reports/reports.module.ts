import { mkdir } from 'node:fs/promises';
import { Inject, Module, type OnApplicationBootstrap } from '@nestjs/common';
import { APP_CONFIG, type AppConfig } from '../config/app-config.js';
import { ReportsController } from './reports.controller.js';
import { SalesReportWorkflow } from './sales-report.workflow.js';

/** The daily sales report (a workflow that can fail and be resumed: see SalesReportWorkflow). */
@Module({ controllers: [ReportsController], providers: [SalesReportWorkflow] })
export class ReportsModule implements OnApplicationBootstrap {
  constructor(@Inject(APP_CONFIG) private readonly config: AppConfig) {}

  async onApplicationBootstrap(): Promise<void> {
    if (this.config.reports.createDir) await mkdir(this.config.reports.dir, { recursive: true });
  }
}
