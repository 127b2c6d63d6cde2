import type { AppModule } from '../plugin.ts';
import { registerDeliveryLogRoutes, registerWebhookManagementRoutes } from './routes.ts';

/** The webhook management API: the delivery log, and (on managed factories) webhook writes. */
export const webhooksModule: AppModule = {
  name: 'webhooks',
  async api(app, ctx) {
    await registerDeliveryLogRoutes(app, ctx);
    await registerWebhookManagementRoutes(app, ctx);
  },
};
