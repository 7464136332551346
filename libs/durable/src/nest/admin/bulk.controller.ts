import { Body, HttpCode, Inject, Post, Query, Req } from '@nestjs/common';
import { AdminService } from '../../admin/admin-service.js';
import { parseBulkExecute, parseBulkPreview } from '../../admin/bulk-params.js';
import { onlyKnown } from '../../admin/params.js';
import { actorOf, errors } from './mount.js';
import { BulkExecuteBodyDto, BulkExecuteDto, BulkPreviewBodyDto, BulkPreviewDto } from './operations-dto.js';
import { ApiBody, ApiOkResponse, ApiOperation } from './swagger.js';

/** Operations on many runs at once: bulk actions by filter (a dry run, then confirmed bounded batches). */
export class BulkController {
  constructor(@Inject(AdminService) private readonly admin: AdminService) {}

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
    return this.admin.bulk.preview(parseBulkPreview(body));
  }

  @Post('runs/bulk/execute')
  @HttpCode(200)
  @ApiOperation({
    summary: 'One batch of a confirmed bulk action',
    description:
      'Send the preview token; each answer carries the token of the next batch (null when complete) and the progress. ' +
      'Each run gets the single-run operation (cancel, resume; retry = resume of a FAILED run; delete of a finished run); ' +
      "a run whose status changed meanwhile is skipped. Each run's history records the actor of this request, as a single action does. " +
      "The tokens are signed (HMAC-SHA256 with the admin module's key) over the action, the filter, the preview time and the matched " +
      'count; the action never changes more runs than the preview matched (unless its count was capped). Each token is valid 15 minutes ' +
      'and once: an altered, expired or wrong-action token is refused with 400, a token already executed with 409, and nothing changes. ' +
      'complete is true on the batch that reaches the end.',
  })
  @ApiBody({ type: BulkExecuteBodyDto })
  @ApiOkResponse({ type: BulkExecuteDto })
  @errors(400)
  bulkExecute(@Body() body: unknown, @Query() query: unknown, @Req() req: unknown) {
    onlyKnown(query, []);
    const { token, batchSize, action } = parseBulkExecute(body);
    return this.admin.bulk.execute(token, batchSize, actorOf(this, req), action);
  }
}
