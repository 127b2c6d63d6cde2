import type { AppModule } from '../plugin.ts';
import { controllerFor } from '../reconciler/index.ts';
import { registerFactoryFileRoutes } from './factory-file-routes.ts';
import { registerFactoryRoutes } from './routes.ts';
import { FactoryService } from './service.ts';
import { reportStartupFactory } from './startup-report.ts';

/**
 * Factories: the API, and in processes with the `controller` role the reconcile loops of every factory
 * (git pollers, directory watchers). `serve --factory DIR|GIT_URL` creates or re-points its factory here, and
 * reports its every apply on stderr as `file:line:col` lines.
 */
export const factoriesModule: AppModule = {
  name: 'factories',
  api: registerFactoryRoutes,
  async start(ctx) {
    const controller = controllerFor(ctx);
    if (ctx.config.roles.has('controller')) await controller.start();
    let stopReport = (): void => {};
    if (ctx.config.factory) {
      const factory = await new FactoryService(ctx).ensureStartupFactory(ctx.config.factory);
      ctx.log.info(
        { factory_id: factory.id, name: factory.name },
        `factory ${factory.name} follows ${ctx.config.factory}`,
      );
      stopReport = await reportStartupFactory(ctx, factory.id, (text) => process.stderr.write(text));
    }
    return () => {
      stopReport();
      return controller.stop();
    };
  },
};

/** The factory-file wire endpoints: published JSON Schemas and dry-run validation. */
export const factoryFilesModule: AppModule = {
  name: 'factory-files',
  api: registerFactoryFileRoutes,
};
