import { Get, Inject, Query } from '@nestjs/common';
import { AdminService } from '../../admin/admin-service.js';
import { onlyKnown, parseChartsQuery, parseStatsQuery } from '../../admin/params.js';
import { HookCursorsDto, StatsDto, VersionsDto, WorkflowsDto } from './dto.js';
import { errors } from './mount.js';
import { ChartsDto } from './operations-dto.js';
import { ApiOkResponse, ApiOperation, ApiQuery } from './swagger.js';

/** What the cluster is doing and what this instance runs: stats, charts, versions, hook consumers, workflows. */
export class InsightsController {
  constructor(@Inject(AdminService) private readonly admin: AdminService) {}

  @Get('stats')
  @ApiOperation({
    summary: 'Per workflow and queue: counts by status, started/completed per minute (last hour), oldest claimable age, expired leases',
  })
  @ApiQuery({ name: 'windowMinutes', required: false, description: 'Finished runs counted over this many minutes (1..10080, default 60)' })
  @ApiOkResponse({ type: StatsDto })
  @errors(400)
  stats(@Query() query: unknown) {
    return this.admin.insights.stats(parseStatsQuery(query).windowMinutes);
  }

  @Get('charts')
  @ApiOperation({
    summary: 'Throughput and failures over 1 h, 24 h or 7 d',
    description:
      'Per bucket (1 min, 30 min, 3 h): runs started, and runs finished by status. One indexed query each (created_at, finished_at).',
  })
  @ApiQuery({ name: 'range', required: false, enum: ['1h', '24h', '7d'] })
  @ApiOkResponse({ type: ChartsDto })
  @errors(400)
  charts(@Query() query: unknown) {
    return this.admin.insights.charts(parseChartsQuery(query).range);
  }

  @Get('versions')
  @ApiOperation({
    summary: "App versions with runs in flight (PENDING, RUNNING, WAITING), oldest first; this instance's appVersion and runVersions",
    description: 'During a rolling deploy: an old build can stop once its version has no run in flight.',
  })
  @ApiOkResponse({ type: VersionsDto })
  @errors(400)
  versions(@Query() query: unknown) {
    onlyKnown(query, []);
    return this.admin.insights.versions();
  }

  @Get('hooks')
  @ApiOperation({ summary: 'Lifecycle-hook consumers: cursor in the run history, lease holder, backlog' })
  @ApiOkResponse({ type: HookCursorsDto })
  @errors(400)
  hooks(@Query() query: unknown) {
    onlyKnown(query, []);
    return this.admin.insights.hooks();
  }

  @Get('workflows')
  @ApiOperation({ summary: 'Workflows registered in this app instance, with their options' })
  @ApiOkResponse({ type: WorkflowsDto })
  @errors(400)
  workflows(@Query() query: unknown) {
    onlyKnown(query, []);
    return this.admin.insights.workflows();
  }
}
