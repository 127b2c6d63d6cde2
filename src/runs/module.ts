import { Type } from 'typebox';
import type { AppModule } from '../plugin.ts';
import { AppError } from '../kernel/errors.ts';
import { toRunItem } from './model.ts';
import { getRunBySession } from './plans.ts';
import { registerAttachmentRoutes } from './attachments.ts';
import { registerCatalogRoutes } from './catalog-routes.ts';
import { registerFollowupListRoute, registerRunRoutes } from './routes.ts';
import { RunService } from './service.ts';
import { renderSessionPage } from './session-page.ts';
import { adminsOnlySecrets } from './secret-names.ts';
import type { RunSecretsCheck } from './secret-names.ts';

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
    app.get(
      '/sessions/:sessionId',
      { schema: { hide: true, params: Type.Object({ sessionId: Type.String() }) } },
      async (request, reply) => {
        const row = await getRunBySession(ctx.db, request.params.sessionId);
        if (!row) throw new AppError('resource_not_found', 'no such session');
        return reply.type('text/html; charset=utf-8').send(renderSessionPage(toRunItem(row, ctx.config.publicUrl)));
      },
    );
  },
});
