import { Body, Get, HttpCode, Inject, Post, Query, Req, Sse, type MessageEvent, type Type } from '@nestjs/common';
import { Observable } from 'rxjs';
import { AdminService } from '../../admin/admin-service.js';
import { parseBulkExecute, parseBulkPreview } from '../../admin/bulk-params.js';
import { onlyKnown, parseChartsQuery, parseLiveQuery } from '../../admin/params.js';
import type { ResolvedAdminOptions } from './admin-options.js';
import { errors, mountAdminController } from './admin.controller.js';
import { requestActor } from './request-actor.js';
import { BulkExecuteBodyDto, BulkExecuteDto, BulkPreviewBodyDto, BulkPreviewDto, ChartsDto } from './operations-dto.js';
import { ApiBody, ApiOkResponse, ApiOperation, ApiQuery } from './swagger.js';

/**
 * Operations on many runs at once: bulk actions by filter (a dry run, then confirmed bounded
 * batches). Mounted with the same path, guards and error filter as the admin API.
 */
export class AdminOperationsController {
  static settings: ResolvedAdminOptions;

  constructor(@Inject(AdminService) protected readonly admin: AdminService) {}

  @Post('runs/bulk/preview')
  @HttpCode(200)
  @ApiOperation({
    summary: 'Dry run of a bulk action: how many runs it would change, and the token that confirms it',
    description: 'Nothing changes. Runs created after the preview are never touched by its token.',
  })
  @ApiBody({ type: BulkPreviewBodyDto })
  @ApiOkResponse({ type: BulkPreviewDto })
  @errors(400)
  bulkPreview(@Body() body: unknown, @Query() query: unknown) {
    onlyKnown(query, []);
    return this.admin.bulkPreview(parseBulkPreview(body));
  }

  @Post('runs/bulk/execute')
  @HttpCode(200)
  @ApiOperation({
    summary: 'One batch of a confirmed bulk action',
    description:
      'Send the preview token; each answer carries the token of the next batch (null when complete) and the progress. ' +
      'Each run gets the single-run operation (cancel, resume; retry = resume of a FAILED run; delete of a finished run); ' +
      "a run whose status changed meanwhile is skipped. Each run's history records the actor of this request, as a single action does.",
  })
  @ApiBody({ type: BulkExecuteBodyDto })
  @ApiOkResponse({ type: BulkExecuteDto })
  @errors(400)
  bulkExecute(@Body() body: unknown, @Query() query: unknown, @Req() req: unknown) {
    onlyKnown(query, []);
    const { token, batchSize } = parseBulkExecute(body);
    return this.admin.bulkExecute(
      token,
      batchSize,
      requestActor((this.constructor as typeof AdminOperationsController).settings.actor, req),
    );
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
    return this.admin.charts(parseChartsQuery(query).range);
  }

  @Sse('live')
  @ApiOperation({
    summary: 'Live updates (Server-Sent Events) for the runs list, one run and the stats',
    description:
      'Events: hello (at once), changes { ids, many } (runs updated: reload what you show), run { id, version } (the run ' +
      'given as `run` changed: steps, progress or status), stats (the GET stats answer, at most every 5 s), ping (every 10 s). ' +
      'All connections share one query per second. Behind a proxy that buffers responses no event arrives: poll instead.',
  })
  @ApiQuery({ name: 'run', required: false, description: 'A run id whose changes to send' })
  @ApiQuery({ name: 'stats', required: false, enum: ['true', 'false'] })
  @errors(400)
  live(@Query() query: unknown): Observable<MessageEvent> {
    const s = parseLiveQuery(query);
    return new Observable<MessageEvent>((subscriber) =>
      this.admin.live.subscribe(s, (e) => subscriber.next({ type: e.type, data: e.data as object })),
    );
  }
}

/** The operations controller for one module definition. */
export function createOperationsController(settings: ResolvedAdminOptions): Type<AdminOperationsController> {
  class DurableOperationsController extends AdminOperationsController {}
  DurableOperationsController.settings = settings;
  return mountAdminController(DurableOperationsController, settings);
}
