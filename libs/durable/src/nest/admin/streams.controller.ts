import { Get, Inject, Param, Query } from '@nestjs/common';
import { AdminService } from '../../admin/admin-service.js';
import { onlyKnown, parseStreamPageQuery, runId, text } from '../../admin/params.js';
import { StreamListDto, StreamPageDto } from './streams-dto.js';
import { errors, idParam } from './mount.js';
import { ApiOkResponse, ApiOperation, ApiParam, ApiQuery } from './swagger.js';

/** A run's streams (Durable.stream): the list and a page of chunks. Apps serve them to their users with WorkflowClient.streamEvents. */
export class StreamsController {
  constructor(@Inject(AdminService) private readonly admin: AdminService) {}

  @Get('runs/:id/streams')
  @ApiOperation({ summary: 'The streams a run wrote to, with their chunk counts' })
  @idParam
  @ApiOkResponse({ type: StreamListDto })
  @errors(400, 404)
  list(@Param('id') id: unknown, @Query() query: unknown) {
    onlyKnown(query, []);
    return this.admin.streams.list(runId(id));
  }

  @Get('runs/:id/streams/:stream')
  @ApiOperation({ summary: "A page of one of a run's streams, from a position" })
  @idParam
  @ApiParam({ name: 'stream', description: 'Stream name' })
  @ApiQuery({ name: 'from', required: false, description: 'First position, default 0' })
  @ApiQuery({ name: 'limit', required: false, description: '1..500, default 100' })
  @ApiOkResponse({ type: StreamPageDto })
  @errors(400, 404)
  page(@Param('id') id: unknown, @Param('stream') stream: unknown, @Query() query: unknown) {
    const q = parseStreamPageQuery(query);
    return this.admin.streams.page(runId(id), text('stream', stream), q.from, q.limit);
  }
}
