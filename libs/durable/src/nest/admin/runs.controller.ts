import { Body, Get, HttpCode, Inject, Param, Post, Query, Req } from '@nestjs/common';
import { AdminService } from '../../admin/admin-service.js';
import { onlyKnown, parseCancelBody, parseForkBody, parseListQuery, runId } from '../../admin/params.js';
import { CancelBodyDto, ForkBodyDto, ForkResultDto, RunDetailDto, RunExportDto, RunListDto, RunSummaryDto } from './dto.js';
import { StartBlockersDto } from './flow-dto.js';
import { actorOf, errors, idParam, STATUS_LIST } from './mount.js';
import { ApiBody, ApiCreatedResponse, ApiOkResponse, ApiOperation, ApiQuery } from './swagger.js';

/** Runs: the list, one run (detail, export, blockers) and the single-run actions. */
export class RunsController {
  constructor(@Inject(AdminService) private readonly admin: AdminService) {}

  @Get('runs')
  @ApiOperation({
    summary: 'List runs',
    description: 'Filters combine with AND. Keyset pagination: pass nextCursor back as cursor (stable under inserts).',
  })
  @ApiQuery({ name: 'status', required: false, description: `One or more of ${STATUS_LIST} (comma-separated or repeated)` })
  @ApiQuery({ name: 'workflow', required: false, description: 'Workflow name (repeat for several)' })
  @ApiQuery({ name: 'queue', required: false, description: 'Queue name (repeat for several)' })
  @ApiQuery({ name: 'createdFrom', required: false, description: 'ISO 8601 or epoch ms, inclusive' })
  @ApiQuery({ name: 'createdTo', required: false, description: 'ISO 8601 or epoch ms, exclusive' })
  @ApiQuery({ name: 'finishedFrom', required: false, description: 'ISO 8601 or epoch ms, inclusive' })
  @ApiQuery({ name: 'finishedTo', required: false, description: 'ISO 8601 or epoch ms, exclusive' })
  @ApiQuery({ name: 'idPrefix', required: false, description: 'Runs whose id starts with this text' })
  @ApiQuery({ name: 'parentId', required: false, description: 'Children of this run' })
  @ApiQuery({ name: 'tag', required: false, description: 'Runs carrying every one of these tags (comma-separated or repeated)' })
  @ApiQuery({ name: 'input', required: false, description: 'A JSON object the run input must contain, e.g. {"customer":"acme"}' })
  @ApiQuery({ name: 'sort', required: false, enum: ['created', 'updated'] })
  @ApiQuery({ name: 'order', required: false, enum: ['desc', 'asc'] })
  @ApiQuery({ name: 'limit', required: false, description: '1..200, default 50' })
  @ApiQuery({ name: 'cursor', required: false, description: 'nextCursor of the previous page' })
  @ApiOkResponse({ type: RunListDto })
  @errors(400)
  listRuns(@Query() query: unknown) {
    return this.admin.runs.list(parseListQuery(query));
  }

  @Get('runs/:id')
  @ApiOperation({ summary: 'A run with its step timeline, messages, events, history and children' })
  @idParam
  @ApiOkResponse({ type: RunDetailDto })
  @errors(400, 404)
  getRun(@Param('id') id: unknown, @Query() query: unknown) {
    onlyKnown(query, []);
    return this.admin.runs.get(runId(id));
  }

  @Get('runs/:id/export')
  @ApiOperation({
    summary: 'The run and its checkpoints as recorded (JSON), to replay against new code with replayRun() of nestjs-durable/testing',
  })
  @idParam
  @ApiOkResponse({ type: RunExportDto })
  @errors(400, 404)
  exportRun(@Param('id') id: unknown, @Query() query: unknown) {
    onlyKnown(query, []);
    return this.admin.runs.export(runId(id));
  }

  @Get('runs/:id/blockers')
  @ApiOperation({ summary: "Why a run has not started: not due yet, its queue's limit, its concurrency key's limit" })
  @idParam
  @ApiOkResponse({ type: StartBlockersDto })
  @errors(400, 404)
  runBlockers(@Param('id') id: unknown, @Query() query: unknown) {
    onlyKnown(query, []);
    return this.admin.runs.blockers(runId(id));
  }

  @Post('runs/:id/cancel')
  @HttpCode(200)
  @ApiOperation({
    summary: 'Cancel an unfinished run (idempotent for a cancelled one)',
    description:
      'With { "compensate": true } the run first undoes what its completed steps did (their compensations, newest first), ' +
      'then ends CANCELLED; until then it stays unfinished with cancelRequestedAt set.',
  })
  @idParam
  @ApiBody({ type: CancelBodyDto, required: false })
  @ApiOkResponse({ type: RunSummaryDto })
  @errors(400, 404, 409)
  cancel(@Param('id') id: unknown, @Body() body: unknown, @Query() query: unknown, @Req() req: unknown) {
    onlyKnown(query, []);
    const run = runId(id);
    return this.admin.runs.cancel(run, parseCancelBody(body), actorOf(this, req));
  }

  @Post('runs/:id/resume')
  @HttpCode(200)
  @ApiOperation({ summary: 'Resume a FAILED or CANCELLED run from its last checkpoint' })
  @idParam
  @ApiOkResponse({ type: RunSummaryDto })
  @errors(400, 404, 409)
  resume(@Param('id') id: unknown, @Query() query: unknown, @Req() req: unknown) {
    onlyKnown(query, []);
    return this.admin.runs.resume(runId(id), actorOf(this, req));
  }

  @Post('runs/:id/fork')
  @HttpCode(201)
  @ApiOperation({ summary: 'Start a new run of the same workflow and input, reusing the checkpoints before fromStep' })
  @idParam
  @ApiBody({ type: ForkBodyDto })
  @ApiCreatedResponse({ type: ForkResultDto })
  @errors(400, 404, 409)
  fork(@Param('id') id: unknown, @Body() body: unknown, @Query() query: unknown, @Req() req: unknown) {
    onlyKnown(query, []);
    const run = runId(id);
    return this.admin.runs.fork(run, parseForkBody(body).fromStep, actorOf(this, req));
  }
}
