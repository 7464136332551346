import { Body, Get, HttpCode, Inject, Param, Post, Query } from '@nestjs/common';
import { AdminService } from '../../admin/admin-service.js';
import { onlyKnown, parseFlowKeysQuery, parseLimitsBody, parseForceQuery, queueName } from '../../admin/params.js';
import { FlowDto, FlowKeysDto, QueueLimitsBodyDto, QueueLimitsDto, QueueLimitsResetDto } from './flow-dto.js';
import { errors, queueParam } from './mount.js';
import { ApiBody, ApiOkResponse, ApiOperation, ApiQuery } from './swagger.js';

/** Flow control: queues' limits and usage, the busiest keys, runtime limits. */
export class FlowController {
  constructor(@Inject(AdminService) private readonly admin: AdminService) {}

  @Get('flow')
  @ApiOperation({ summary: 'Flow control: every queue with cluster-wide limits, its executing and due runs' })
  @ApiOkResponse({ type: FlowDto })
  @errors(400)
  flow(@Query() query: unknown) {
    onlyKnown(query, []);
    return this.admin.flow.overview();
  }

  @Get('flow/queues/:queue/keys')
  @ApiOperation({ summary: 'The busiest concurrency keys of a queue: executing and due runs per key, most executing first' })
  @queueParam
  @ApiQuery({ name: 'limit', required: false, description: '1..1000, default 50' })
  @ApiOkResponse({ type: FlowKeysDto })
  @errors(400)
  flowKeys(@Param('queue') queue: unknown, @Query() query: unknown) {
    return this.admin.flow.keys(queueName(queue), parseFlowKeysQuery(query).limit);
  }

  @Post('flow/queues/:queue/limits')
  @HttpCode(200)
  @ApiOperation({
    summary: "Change a queue's cluster-wide limits at runtime (kept across restarts until reset); every instance follows at once",
    description:
      'A partial update: only the limits in the body change; a limit given as null is removed; absent ones stay as they are. ' +
      'A queue that no registered workflow uses (and that the queues option does not name) is refused with 400 listing the ' +
      'known queues, unless force=true. Queue names: 1..256 characters, no control characters.',
  })
  @queueParam
  @ApiQuery({ name: 'force', required: false, enum: ['true', 'false'], description: 'Set limits for a queue no workflow uses' })
  @ApiBody({ type: QueueLimitsBodyDto })
  @ApiOkResponse({ type: QueueLimitsDto })
  @errors(400)
  setQueueLimits(@Param('queue') queue: unknown, @Body() body: unknown, @Query() query: unknown) {
    const { force } = parseForceQuery(query);
    return this.admin.flow.setLimits(queueName(queue), parseLimitsBody(body), force);
  }

  @Post('flow/queues/:queue/reset')
  @HttpCode(200)
  @ApiOperation({ summary: 'Drop a runtime limit: the queue goes back to the limits its options declare' })
  @queueParam
  @ApiOkResponse({ type: QueueLimitsResetDto })
  @errors(400)
  resetQueueLimits(@Param('queue') queue: unknown, @Query() query: unknown) {
    onlyKnown(query, []);
    return this.admin.flow.resetLimits(queueName(queue));
  }
}
