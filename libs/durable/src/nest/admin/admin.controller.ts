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
  UseFilters,
  UseGuards,
  type OnModuleInit,
  type Type,
} from '@nestjs/common';
import { AdminExceptionFilter } from './admin-exception.filter.js';
import type { ResolvedAdminOptions } from './admin-options.js';
import { AdminService } from '../../admin/admin-service.js';
import {
  CancelBodyDto,
  ErrorDto,
  ForkBodyDto,
  ForkResultDto,
  RunDetailDto,
  RunListDto,
  RunSummaryDto,
  ScheduleDetailDto,
  ScheduleDto,
  ScheduleListDto,
  StatsDto,
  TriggerResultDto,
  WorkflowsDto,
} from './dto.js';
import {
  onlyKnown,
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
  cancel(@Param('id') id: unknown, @Body() body: unknown, @Query() query: unknown) {
    onlyKnown(query, []);
    const run = runId(id);
    return this.admin.cancel(run, parseCancelBody(body));
  }

  @Post('runs/:id/resume')
  @HttpCode(200)
  @ApiOperation({ summary: 'Resume a FAILED or CANCELLED run from its last checkpoint' })
  @idParam
  @ApiOkResponse({ type: RunSummaryDto })
  @errors(400, 404, 409)
  resume(@Param('id') id: unknown, @Query() query: unknown) {
    onlyKnown(query, []);
    return this.admin.resume(runId(id));
  }

  @Post('runs/:id/fork')
  @HttpCode(201)
  @ApiOperation({ summary: 'Start a new run of the same workflow and input, reusing the checkpoints before fromStep' })
  @idParam
  @ApiBody({ type: ForkBodyDto })
  @ApiCreatedResponse({ type: ForkResultDto })
  @errors(400, 404, 409)
  fork(@Param('id') id: unknown, @Body() body: unknown, @Query() query: unknown) {
    onlyKnown(query, []);
    const run = runId(id);
    return this.admin.fork(run, parseForkBody(body).fromStep);
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

/** Mounts an admin controller class at the configured path, behind the guards, with the admin error filter. */
export function mountAdminController<T extends Type<unknown>>(cls: T, settings: ResolvedAdminOptions): T {
  Controller(settings.path)(cls);
  if (settings.guards.length) UseGuards(...settings.guards)(cls);
  UseFilters(AdminExceptionFilter)(cls);
  ApiTags('durable')(cls);
  ApiExtraModels(ErrorDto)(cls);
  return cls;
}
