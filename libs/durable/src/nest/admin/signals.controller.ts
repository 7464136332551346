import { Get, Inject, Query } from '@nestjs/common';
import { AdminService } from '../../admin/admin-service.js';
import { onlyKnown } from '../../admin/params.js';
import { SignalListDto } from './signals-dto.js';
import { errors } from './mount.js';
import { ApiOkResponse, ApiOperation } from './swagger.js';

/** Signals (defineSignal): which the app declares, and the runs waiting for one. Sending goes through the signal's own endpoint. */
export class SignalsController {
  constructor(@Inject(AdminService) private readonly admin: AdminService) {}

  @Get('signals')
  @ApiOperation({
    summary: "The app's signals and the runs waiting for one",
    description: "Answer a wait with POST to the signal's path (its guards decide who may), e.g. from the dashboard.",
  })
  @ApiOkResponse({ type: SignalListDto })
  @errors(400)
  list(@Query() query: unknown) {
    onlyKnown(query, []);
    return this.admin.signals.list();
  }
}
