import type { AppModule } from '../plugin.ts';
import { registerSecretRoutes } from './routes.ts';

export const secretsModule: AppModule = {
  name: 'secrets',
  api: registerSecretRoutes,
};
