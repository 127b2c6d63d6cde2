import type { AppModule } from '../plugin.ts';
import type { ServiceContext } from '../context.ts';
import { ingressRuntimeOf } from '../ingress/module.ts';
import { ConnectionCache } from './connections.ts';
import { registerProviderEventRoutes } from './events-routes.ts';
import { registerIntegrationRoutes } from './routes.ts';

const caches = new WeakMap<ServiceContext, ConnectionCache>();

/** Provider connections: their API, and the events routes on the ingress (after the ingress module). */
export const integrationsModule: AppModule = {
  name: 'integrations',
  async api(app, ctx) {
    await registerIntegrationRoutes(app, ctx);
  },
  async root(app, ctx) {
    const ingress = ingressRuntimeOf(ctx);
    if (!ingress) return;
    const connections = new ConnectionCache(ctx.db, ctx.cipher, ctx.log);
    caches.set(ctx, connections);
    registerProviderEventRoutes(app, { ctx, ingress, limits: ingress.limits, connections });
  },
  async start(ctx) {
    const connections = caches.get(ctx);
    connections?.start(ctx.bus);
    return async () => connections?.stop();
  },
};
