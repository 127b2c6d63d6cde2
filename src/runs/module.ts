import { Type } from 'typebox';
import type { AppModule } from '../plugin.ts';
import { AppError } from '../kernel/errors.ts';
import { CONSOLE_SESSION_COOKIE, consoleRunPath } from '../kernel/api.ts';
import { toRunItem } from './model.ts';
import { getRunBySession } from './plans.ts';
import { registerAttachmentRoutes } from './attachments.ts';
import { registerCatalogRoutes } from './catalog-routes.ts';
import { registerFollowupListRoute, registerRunRoutes } from './routes.ts';
import { RunService } from './service.ts';
import { renderSessionPage } from './session-page.ts';
import { adminsOnlySecrets } from './secret-names.ts';
import type { RunSecretsCheck } from './secret-names.ts';
import { sessionLinksFor } from './session-link.ts';

export interface RunsModuleOptions {
  /** Which secrets a caller may name in a run (src/modules.ts passes the factories' grants). */
  checkSecrets?: RunSecretsCheck;
}

export const createRunsModule = (options: RunsModuleOptions = {}): AppModule => ({
  name: 'runs',
  async api(app, ctx) {
    const runs = new RunService(ctx.db, ctx.bus);
    await registerRunRoutes(app, ctx, runs, options.checkSecrets ?? adminsOnlySecrets);
    await registerFollowupListRoute(app, runs);
    await registerAttachmentRoutes(app, ctx, runs);
    await registerCatalogRoutes(app, ctx);
  },
  async root(app, ctx) {
    const links = sessionLinksFor(ctx);
    // A signed link (run answers carry one) with its lifetime; without a valid signature the session does not
    // exist, as far as the caller can tell.
    app.get(
      '/sessions/:sessionId',
      {
        schema: {
          hide: true,
          params: Type.Object({ sessionId: Type.String() }),
          querystring: Type.Object({ exp: Type.Optional(Type.String()), sig: Type.Optional(Type.String()) }),
        },
      },
      async (request, reply) => {
        const { sessionId } = request.params;
        const check = links.verify(sessionId, request.query.exp, request.query.sig);
        if (check === 'invalid') throw new AppError('resource_not_found', 'no such session');
        if (check === 'expired')
          throw new AppError(
            'session_link_expired',
            "this session link has expired; the run's session_link has a new one",
          );
        const row = await getRunBySession(ctx.db, sessionId);
        if (!row) throw new AppError('resource_not_found', 'no such session');
        // Someone signed in to the console gets the run's full page there (which checks their team's access).
        if (request.headers.cookie?.split(';').some((c) => c.trim().startsWith(`${CONSOLE_SESSION_COOKIE}=`))) {
          return reply.redirect(consoleRunPath(row.id), 303);
        }
        return reply
          .type('text/html; charset=utf-8')
          .header('cache-control', 'private, no-store')
          .header('referrer-policy', 'no-referrer')
          .send(renderSessionPage(toRunItem(row, links.urlFor)));
      },
    );
  },
});
