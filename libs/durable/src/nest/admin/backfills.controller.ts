import { Get, HttpCode, Inject, Param, Post, Query } from '@nestjs/common';
import { AdminService } from '../../admin/admin-service.js';
import { onlyKnown, parseBackfillsQuery, runId } from '../../admin/params.js';
import { BackfillControlDto, BackfillListDto } from './backfill-dto.js';
import { errors, idParam } from './mount.js';
import { ApiOkResponse, ApiOperation, ApiQuery } from './swagger.js';

/** Backfills (Durable.backfill): progress, pause, resume. Cancel one like any run. */
export class BackfillsController {
  constructor(@Inject(AdminService) private readonly admin: AdminService) {}

  @Get('backfills')
  @ApiOperation({ summary: 'Backfills, newest first: rows done, estimate, rate, time left, paused' })
  @ApiQuery({ name: 'limit', required: false, description: '1..1000, default 50' })
  @ApiOkResponse({ type: BackfillListDto })
  @errors(400)
  list(@Query() query: unknown) {
    return this.admin.backfills.list(parseBackfillsQuery(query).limit);
  }

  @Post('backfills/:id/pause')
  @HttpCode(200)
  @ApiOperation({ summary: 'Pause a backfill after its current batch (it then waits without a worker slot)' })
  @idParam
  @ApiOkResponse({ type: BackfillControlDto })
  @errors(400, 404, 409)
  pause(@Param('id') id: unknown, @Query() query: unknown) {
    onlyKnown(query, []);
    return this.admin.backfills.pause(runId(id));
  }

  @Post('backfills/:id/resume')
  @HttpCode(200)
  @ApiOperation({ summary: 'Let a paused backfill go on from where it stopped' })
  @idParam
  @ApiOkResponse({ type: BackfillControlDto })
  @errors(400, 404, 409)
  resume(@Param('id') id: unknown, @Query() query: unknown) {
    onlyKnown(query, []);
    return this.admin.backfills.resume(runId(id));
  }
}
