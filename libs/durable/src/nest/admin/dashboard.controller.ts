import { Controller, Get, Inject, Param, Req, Res, type Type } from '@nestjs/common';
import { HttpAdapterHost } from '@nestjs/core';
import { DASHBOARD_FILES, DASHBOARD_HEADERS, dashboardFile, isDashboardFile, type DashboardFile } from '../../admin/dashboard-assets.js';
import { applyAdminHeaders } from './request-policy.js';
import { ApiExcludeController } from './swagger.js';

/**
 * Serves the dashboard: a static page and its assets (scripts, stylesheet), no data. It is not behind the
 * admin guards so that a browser can load it and then call the (guarded) API with the
 * credentials it has: cookies, or a bearer token typed into the page.
 */
export class DashboardPageController {
  static lastSegment: string;

  constructor(@Inject(HttpAdapterHost) private readonly adapterHost: HttpAdapterHost) {}

  /** GET {path}/ serves the page; GET {path} redirects there so that relative URLs resolve under {path}/. */
  @Get()
  page(@Req() req: { originalUrl?: string; url?: string }, @Res() res: unknown): void {
    const url = String(req.originalUrl ?? req.url ?? '');
    const pathname = url.split('?')[0];
    applyAdminHeaders(res); // on every answer, the redirect and the 404s included
    if (!pathname.endsWith('/')) {
      this.adapterHost.httpAdapter.redirect(res, 302, `${(this.constructor as typeof DashboardPageController).lastSegment}/`);
      return;
    }
    this.send(res, 'index.html');
  }

  /** GET {path}/assets/<file>: the page's scripts (ES modules) and stylesheet; any other name is a 404. */
  @Get('assets/:file')
  asset(@Param('file') file: string, @Res() res: unknown): void {
    applyAdminHeaders(res);
    if (!isDashboardFile(file)) {
      this.adapterHost.httpAdapter.reply(res, { statusCode: 404, error: 'Not Found', message: 'No such dashboard file.' }, 404);
      return;
    }
    this.send(res, file);
  }

  private send(res: unknown, name: DashboardFile): void {
    const { httpAdapter } = this.adapterHost;
    const text = dashboardFile(name);
    if (text === null) {
      httpAdapter.reply(
        res,
        {
          statusCode: 404,
          error: 'Not Found',
          message: `nestjs-durable was installed without its dashboard file admin/dashboard/${name}; reinstall the package.`,
        },
        404,
      );
      return;
    }
    applyAdminHeaders(res, { ...DASHBOARD_HEADERS, 'Content-Type': DASHBOARD_FILES[name] }); // the page's own on top
    httpAdapter.reply(res, text, 200);
  }
}

/** The dashboard controller for one module definition, mounted at `path`. */
export function createDashboardController(path: string): Type<DashboardPageController> {
  class DurableDashboardController extends DashboardPageController {}
  DurableDashboardController.lastSegment = path.split('/').pop()!;
  Controller(path)(DurableDashboardController);
  ApiExcludeController()(DurableDashboardController);
  return DurableDashboardController;
}
