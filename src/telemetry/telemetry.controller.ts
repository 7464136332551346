import { Controller, Get, Header, NotFoundException, Param, Req, Res } from '@nestjs/common';
import { exampleTelemetry, traceTree } from './otel.js';

/**
 * GET /metrics: every metric in Prometheus' text format (scrape it: see docs/telemetry.md, "Metrics"); GET
 * /traces/:traceId: the spans of one trace kept in memory, as a tree (the run detail of the admin
 * API gives a run's trace id).
 */
@Controller()
export class TelemetryController {
  @Get('metrics')
  metrics(@Req() req: unknown, @Res() res: unknown): void {
    const t = exampleTelemetry();
    if (!t) throw new NotFoundException('telemetry is not started (main.ts starts it; OTEL_SDK_DISABLED=true turns it off)');
    t.prometheus.getMetricsRequestHandler(req as never, res as never);
  }

  @Get('traces/:traceId')
  @Header('content-type', 'text/plain; charset=utf-8')
  trace(@Param('traceId') traceId: string): string {
    const t = exampleTelemetry();
    if (!t) throw new NotFoundException('telemetry is not started');
    const tree = traceTree(t.spans(), traceId);
    if (!tree.trim()) throw new NotFoundException(`no span of trace ${traceId} in memory (OTEL_TRACES=memory keeps the latest ones)`);
    return tree;
  }
}
