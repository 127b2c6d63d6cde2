import type { AppModule } from '../http/context.ts';
import { registerFactoryFileRoutes } from './routes.ts';

/** The factory-file wire endpoints: published JSON Schemas and dry-run validation. */
export const definitionsModule: AppModule = {
  name: 'definitions',
  api: registerFactoryFileRoutes,
};
