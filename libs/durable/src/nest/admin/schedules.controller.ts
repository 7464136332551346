import { Body, Delete, Get, HttpCode, Inject, Param, Patch, Post, Query } from '@nestjs/common';
import { AdminService } from '../../admin/admin-service.js';
import { onlyKnown, parseForceQuery, parseScheduleDetailQuery, parseScheduleListQuery, scheduleId } from '../../admin/params.js';
import { parseScheduleCreateBody, parseScheduleUpdateBody } from '../../admin/schedule-params.js';
import { ScheduleDetailDto, ScheduleDto, ScheduleListDto, TriggerResultDto } from './dto.js';
import { errors, scheduleParam } from './mount.js';
import { ScheduleCreateBodyDto, ScheduleDeletedDto, ScheduleUpdateBodyDto } from './schedule-dto.js';
import { ApiBody, ApiCreatedResponse, ApiOkResponse, ApiOperation, ApiQuery } from './swagger.js';

/** Schedules: list, detail, create, update, delete, pause, resume and trigger. */
export class SchedulesController {
  constructor(@Inject(AdminService) private readonly admin: AdminService) {}

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
    return this.admin.schedules.list(parseScheduleListQuery(query));
  }

  @Get('schedules/:id')
  @ApiOperation({ summary: 'A schedule with its next slots and latest runs' })
  @scheduleParam
  @ApiQuery({ name: 'runs', required: false, description: 'Latest runs to include, 1..100, default 20' })
  @ApiOkResponse({ type: ScheduleDetailDto })
  @errors(400, 404)
  getSchedule(@Param('id') id: unknown, @Query() query: unknown) {
    const { runs } = parseScheduleDetailQuery(query);
    return this.admin.schedules.get(scheduleId(id), runs);
  }

  @Post('schedules')
  @HttpCode(201)
  @ApiOperation({
    summary: 'Create a runtime schedule of a registered workflow (idempotent for the same definition)',
    description:
      'Its first slot is the first after now. A bad cron, time zone or policy, or a workflow this instance does not register, ' +
      'is a 400 naming the field; the same id with another definition is a 409.',
  })
  @ApiBody({ type: ScheduleCreateBodyDto })
  @ApiCreatedResponse({ type: ScheduleDto })
  @errors(400, 409)
  createSchedule(@Body() body: unknown, @Query() query: unknown) {
    onlyKnown(query, []);
    return this.admin.schedules.create(parseScheduleCreateBody(body));
  }

  @Patch('schedules/:id')
  @HttpCode(200)
  @ApiOperation({
    summary: 'Change a runtime schedule: only the fields given',
    description:
      'A new cron or time zone starts from the first slot after now; other changes keep the next fire. A schedule declared ' +
      'in code changes in code (409). Pause and resume have their own routes.',
  })
  @scheduleParam
  @ApiBody({ type: ScheduleUpdateBodyDto })
  @ApiOkResponse({ type: ScheduleDto })
  @errors(400, 404, 409)
  updateSchedule(@Param('id') id: unknown, @Body() body: unknown, @Query() query: unknown) {
    onlyKnown(query, []);
    return this.admin.schedules.update(scheduleId(id), parseScheduleUpdateBody(body));
  }

  @Delete('schedules/:id')
  @HttpCode(200)
  @ApiOperation({
    summary: 'Delete a schedule (its runs stay)',
    description:
      'A schedule declared in code is refused (409) unless force=true: an instance that still declares it creates it again at its next boot.',
  })
  @scheduleParam
  @ApiQuery({ name: 'force', required: false, enum: ['true', 'false'], description: 'Delete a schedule declared in code' })
  @ApiOkResponse({ type: ScheduleDeletedDto })
  @errors(400, 404, 409)
  deleteSchedule(@Param('id') id: unknown, @Query() query: unknown) {
    return this.admin.schedules.delete(scheduleId(id), parseForceQuery(query).force);
  }

  @Post('schedules/:id/pause')
  @HttpCode(200)
  @ApiOperation({ summary: 'Pause a schedule: no slot fires until resumed (kept across restarts)' })
  @scheduleParam
  @ApiOkResponse({ type: ScheduleDto })
  @errors(400, 404)
  pauseSchedule(@Param('id') id: unknown, @Query() query: unknown) {
    onlyKnown(query, []);
    return this.admin.schedules.pause(scheduleId(id));
  }

  @Post('schedules/:id/resume')
  @HttpCode(200)
  @ApiOperation({ summary: 'Resume a paused schedule from the first slot after now' })
  @scheduleParam
  @ApiOkResponse({ type: ScheduleDto })
  @errors(400, 404, 409)
  resumeSchedule(@Param('id') id: unknown, @Query() query: unknown) {
    onlyKnown(query, []);
    return this.admin.schedules.resume(scheduleId(id));
  }

  @Post('schedules/:id/trigger')
  @HttpCode(200)
  @ApiOperation({ summary: 'Start a run of the schedule now, under its overlap policy (the next fire does not move)' })
  @scheduleParam
  @ApiOkResponse({ type: TriggerResultDto })
  @errors(400, 404, 409)
  triggerSchedule(@Param('id') id: unknown, @Query() query: unknown) {
    onlyKnown(query, []);
    return this.admin.schedules.trigger(scheduleId(id));
  }
}
