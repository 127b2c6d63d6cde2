import type { AppModule } from '../http/context.ts';
import { registerSecretRoutes } from './routes.ts';

export const secretsModule: AppModule = {
  name: 'secrets',
  api: registerSecretRoutes,
};
