import { Get, HttpCode, Inject, Param, Post, Query } from '@nestjs/common';
import { AdminService } from '../../admin/admin-service.js';
import { onlyKnown, parseScheduleDetailQuery, parseScheduleListQuery, scheduleId } from '../../admin/params.js';
import { ScheduleDetailDto, ScheduleDto, ScheduleListDto, TriggerResultDto } from './dto.js';
import { errors, scheduleParam } from './mount.js';
import { ApiOkResponse, ApiOperation, ApiQuery } from './swagger.js';

/** Schedules: list, detail, pause, resume and trigger. */
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
