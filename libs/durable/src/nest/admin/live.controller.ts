import { Inject, Query, ServiceUnavailableException, Sse, type MessageEvent } from '@nestjs/common';
import { Observable } from 'rxjs';
import { AdminService } from '../../admin/admin-service.js';
import { parseLiveQuery } from '../../admin/params.js';
import { errors, type AdminControllerClass } from './mount.js';
import { ApiOperation, ApiQuery } from './swagger.js';

/** Live updates (Server-Sent Events) of the runs list, one run and the stats. */
export class LiveController {
  constructor(@Inject(AdminService) private readonly admin: AdminService) {}

  @Sse('live')
  @ApiOperation({
    summary: 'Live updates (Server-Sent Events) for the runs list, one run and the stats',
    description:
      'Events: hello (at once), changes { ids, many } (runs updated: reload what you show), run { id, version } (the run ' +
      'given as `run` changed: steps, progress or status), stats (the GET stats answer, at most every 5 s), ping (every 10 s). ' +
      'All connections share one query per second. Behind a proxy that buffers responses no event arrives: poll instead. ' +
      'An instance serves at most admin.maxLiveConnections (default 100) at once: past it, 503 with Retry-After (poll meanwhile).',
  })
  @ApiQuery({ name: 'run', required: false, description: 'A run id whose changes to send' })
  @ApiQuery({ name: 'stats', required: false, enum: ['true', 'false'] })
  @errors(400, 503)
  live(@Query() query: unknown): Observable<MessageEvent> {
    const s = parseLiveQuery(query);
    const max = (this.constructor as AdminControllerClass<unknown>).settings.maxLiveConnections;
    if (this.admin.live.subscribers >= max) {
      throw new ServiceUnavailableException(
        `This instance already serves ${max} live-update connections (admin.maxLiveConnections): poll GET runs and stats, ` +
          'or retry the stream later.',
      );
    }
    return new Observable<MessageEvent>((subscriber) =>
      this.admin.live.subscribe(s, (e) => subscriber.next({ type: e.type, data: e.data as object })),
    );
  }
}
