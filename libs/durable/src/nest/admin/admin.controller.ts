import {
  Body,
  Controller,
  Get,
  HttpCode,
  Inject,
  Logger,
  Param,
  Post,
  Query,
  Req,
  UseFilters,
  UseGuards,
  UseInterceptors,
  type OnModuleInit,
  type Type,
} from '@nestjs/common';
import { AdminExceptionFilter } from './admin-exception.filter.js';
import { requestActor } from './request-actor.js';
import { AdminRequestPolicy } from './request-policy.js';
import type { ResolvedAdminOptions } from './admin-options.js';
import { AdminService } from '../../admin/admin-service.js';
import {
  CancelBodyDto,
  ErrorDto,
  ForkBodyDto,
  ForkResultDto,
  RunDetailDto,
  RunExportDto,
  RunListDto,
  RunSummaryDto,
  ScheduleDetailDto,
  ScheduleDto,
  ScheduleListDto,
  StatsDto,
  TriggerResultDto,
  VersionsDto,
  WorkflowsDto,
  HookCursorsDto,
} from './dto.js';
import { FlowDto, FlowKeysDto, QueueLimitsBodyDto, QueueLimitsDto, QueueLimitsResetDto, StartBlockersDto } from './flow-dto.js';
import {
  onlyKnown,
  parseFlowKeysQuery,
  parseLimitsBody,
  queueName,
  parseCancelBody,
  parseForkBody,
  parseListQuery,
  parseScheduleDetailQuery,
  parseScheduleListQuery,
  parseStatsQuery,
  runId,
  scheduleId,
} from '../../admin/params.js';
import {
  ApiBody,
  ApiCreatedResponse,
  ApiExtraModels,
  ApiOkResponse,
  ApiOperation,
  ApiParam,
  ApiQuery,
  ApiResponse,
  ApiTags,
} from './swagger.js';

const STATUS_LIST = 'PENDING, RUNNING, WAITING, SUCCEEDED, FAILED, CANCELLED';
export const errors =
  (...codes: number[]) =>
  (target: object, key: string, desc: PropertyDescriptor) => {
    for (const status of codes) ApiResponse({ status, type: ErrorDto })(target, key, desc);
  };
const idParam = ApiParam({ name: 'id', description: 'Run id' });
const queueParam = ApiParam({ name: 'queue', description: 'Queue name' });
const scheduleParam = ApiParam({ name: 'id', description: 'Schedule id (a declared schedule: the workflow name)' });

/**
 * The admin API's routes. Not a controller by itself: createAdminController() derives one
 * per module definition, with the configured path and the app's guards.
 */
export class AdminApiController implements OnModuleInit {
  static settings: ResolvedAdminOptions;

  constructor(@Inject(AdminService) private readonly admin: AdminService) {}

  onModuleInit(): void {
    const { path, guards, unsafeNoGuard } = (this.constructor as typeof AdminApiController).settings;
    const logger = new Logger('DurableAdmin');
    if (unsafeNoGuard) {
      logger.warn(
        `admin API at /${path} is NOT protected (unsafeNoGuard: true): anyone who reaches this app can read runs and cancel, resume or fork them. Pass admin.guards outside local development.`,
      );
    } else {
      logger.log(
        `admin API at /${path}, guarded by ${guards.map((g) => (typeof g === 'function' ? g.name : g.constructor?.name) || 'guard').join(', ')}`,
      );
    }
  }

  /** Who acts (recorded in the run's history), from the request the guards let through. */
  private actor(req: unknown): string {
    return requestActor((this.constructor as typeof AdminApiController).settings.actor, req);
  }

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
    return this.admin.listRuns(parseListQuery(query));
  }

  @Get('runs/:id')
  @ApiOperation({ summary: 'A run with its step timeline, messages, events, history and children' })
  @idParam
  @ApiOkResponse({ type: RunDetailDto })
  @errors(400, 404)
  getRun(@Param('id') id: unknown, @Query() query: unknown) {
    onlyKnown(query, []);
    return this.admin.getRun(runId(id));
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
    return this.admin.exportRun(runId(id));
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
    return this.admin.cancel(run, parseCancelBody(body), this.actor(req));
  }

  @Post('runs/:id/resume')
  @HttpCode(200)
  @ApiOperation({ summary: 'Resume a FAILED or CANCELLED run from its last checkpoint' })
  @idParam
  @ApiOkResponse({ type: RunSummaryDto })
  @errors(400, 404, 409)
  resume(@Param('id') id: unknown, @Query() query: unknown, @Req() req: unknown) {
    onlyKnown(query, []);
    return this.admin.resume(runId(id), this.actor(req));
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
    return this.admin.fork(run, parseForkBody(body).fromStep, this.actor(req));
  }

  @Get('stats')
  @ApiOperation({
    summary: 'Per workflow and queue: counts by status, started/completed per minute (last hour), oldest claimable age, expired leases',
  })
  @ApiQuery({ name: 'windowMinutes', required: false, description: 'Finished runs counted over this many minutes (1..10080, default 60)' })
  @ApiOkResponse({ type: StatsDto })
  @errors(400)
  stats(@Query() query: unknown) {
    return this.admin.stats(parseStatsQuery(query).windowMinutes);
  }

  @Get('schedules')
  @ApiOperation({
    summary: 'List schedules: next and last fire, policies, paused state',
    description: 'By id; pass nextCursor back as after.',
  })
  @ApiQuery({ name: 'workflow', required: false, description: 'Schedules of this workflow' })
  @ApiQuery({ name: 'paused', required: false, enum: ['true', 'false'] })
  @ApiQuery({ name: 'after', required: false, description: 'nextCursor of the previous page' })
  @ApiQuery({ name: 'limit', required: false, description: '1..200, default 50' })
  @ApiOkResponse({ type: ScheduleListDto })
  @errors(400)
  listSchedules(@Query() query: unknown) {
    return this.admin.listSchedules(parseScheduleListQuery(query));
  }

  @Get('schedules/:id')
  @ApiOperation({ summary: 'A schedule with its next slots and latest runs' })
  @scheduleParam
  @ApiQuery({ name: 'runs', required: false, description: 'Latest runs to include, 1..100, default 20' })
  @ApiOkResponse({ type: ScheduleDetailDto })
  @errors(400, 404)
  getSchedule(@Param('id') id: unknown, @Query() query: unknown) {
    const { runs } = parseScheduleDetailQuery(query);
    return this.admin.getSchedule(scheduleId(id), runs);
  }

  @Post('schedules/:id/pause')
  @HttpCode(200)
  @ApiOperation({ summary: 'Pause a schedule: no slot fires until resumed (kept across restarts)' })
  @scheduleParam
  @ApiOkResponse({ type: ScheduleDto })
  @errors(400, 404)
  pauseSchedule(@Param('id') id: unknown, @Query() query: unknown) {
    onlyKnown(query, []);
    return this.admin.pauseSchedule(scheduleId(id));
  }

  @Post('schedules/:id/resume')
  @HttpCode(200)
  @ApiOperation({ summary: 'Resume a paused schedule from the first slot after now' })
  @scheduleParam
  @ApiOkResponse({ type: ScheduleDto })
  @errors(400, 404, 409)
  resumeSchedule(@Param('id') id: unknown, @Query() query: unknown) {
    onlyKnown(query, []);
    return this.admin.resumeSchedule(scheduleId(id));
  }

  @Post('schedules/:id/trigger')
  @HttpCode(200)
  @ApiOperation({ summary: 'Start a run of the schedule now, under its overlap policy (the next fire does not move)' })
  @scheduleParam
  @ApiOkResponse({ type: TriggerResultDto })
  @errors(400, 404, 409)
  triggerSchedule(@Param('id') id: unknown, @Query() query: unknown) {
    onlyKnown(query, []);
    return this.admin.triggerSchedule(scheduleId(id));
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
    return this.admin.versions();
  }

  @Get('runs/:id/blockers')
  @ApiOperation({ summary: "Why a run has not started: not due yet, its queue's limit, its concurrency key's limit" })
  @idParam
  @ApiOkResponse({ type: StartBlockersDto })
  @errors(400, 404)
  runBlockers(@Param('id') id: unknown, @Query() query: unknown) {
    onlyKnown(query, []);
    return this.admin.runBlockers(runId(id));
  }

  @Get('flow')
  @ApiOperation({ summary: 'Flow control: every queue with cluster-wide limits, its executing and due runs' })
  @ApiOkResponse({ type: FlowDto })
  @errors(400)
  flow(@Query() query: unknown) {
    onlyKnown(query, []);
    return this.admin.flow();
  }

  @Get('flow/queues/:queue/keys')
  @ApiOperation({ summary: 'The busiest concurrency keys of a queue: executing and due runs per key, most executing first' })
  @queueParam
  @ApiQuery({ name: 'limit', required: false, description: '1..1000, default 50' })
  @ApiOkResponse({ type: FlowKeysDto })
  @errors(400)
  flowKeys(@Param('queue') queue: unknown, @Query() query: unknown) {
    return this.admin.flowKeys(queueName(queue), parseFlowKeysQuery(query).limit);
  }

  @Post('flow/queues/:queue/limits')
  @HttpCode(200)
  @ApiOperation({
    summary: "Set a queue's cluster-wide limits at runtime (kept across restarts until reset); every instance follows at once",
  })
  @queueParam
  @ApiBody({ type: QueueLimitsBodyDto })
  @ApiOkResponse({ type: QueueLimitsDto })
  @errors(400)
  setQueueLimits(@Param('queue') queue: unknown, @Body() body: unknown, @Query() query: unknown) {
    onlyKnown(query, []);
    return this.admin.setQueueLimits(queueName(queue), parseLimitsBody(body));
  }

  @Post('flow/queues/:queue/reset')
  @HttpCode(200)
  @ApiOperation({ summary: 'Drop a runtime limit: the queue goes back to the limits its options declare' })
  @queueParam
  @ApiOkResponse({ type: QueueLimitsResetDto })
  @errors(400)
  resetQueueLimits(@Param('queue') queue: unknown, @Query() query: unknown) {
    onlyKnown(query, []);
    return this.admin.resetQueueLimits(queueName(queue));
  }

  @Get('hooks')
  @ApiOperation({ summary: 'Lifecycle-hook consumers: cursor in the run history, lease holder, backlog' })
  @ApiOkResponse({ type: HookCursorsDto })
  @errors(400)
  hooks(@Query() query: unknown) {
    onlyKnown(query, []);
    return this.admin.hooks();
  }

  @Get('workflows')
  @ApiOperation({ summary: 'Workflows registered in this app instance, with their options' })
  @ApiOkResponse({ type: WorkflowsDto })
  @errors(400)
  workflows(@Query() query: unknown) {
    onlyKnown(query, []);
    return this.admin.workflows();
  }
}

/** The admin API controller for one module definition: mounted at `path`, behind `guards`. */
export function createAdminController(settings: ResolvedAdminOptions): Type<AdminApiController> {
  class DurableAdminController extends AdminApiController {}
  DurableAdminController.settings = settings;
  return mountAdminController(DurableAdminController, settings);
}

/**
 * Mounts an admin controller class at the configured path, behind the guards, with the admin error
 * filter and the request policy (security headers; JSON-only, same-origin actions).
 */
export function mountAdminController<T extends Type<unknown>>(cls: T, settings: ResolvedAdminOptions): T {
  Controller(settings.path)(cls);
  if (settings.guards.length) UseGuards(...settings.guards)(cls);
  UseFilters(AdminExceptionFilter)(cls);
  UseInterceptors(AdminRequestPolicy)(cls);
  ApiTags('durable')(cls);
  ApiExtraModels(ErrorDto)(cls);
  return cls;
}
