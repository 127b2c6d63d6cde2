import type { AppModule } from '../http/context.ts';
import { registerIdentityRoutes } from './routes.ts';

export const identityModule: AppModule = {
  name: 'identity',
  api: registerIdentityRoutes,
};
