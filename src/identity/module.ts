import { CREDENTIALS_REVOKED_TOPIC } from '../kernel/topics.ts';
import type { AppModule } from '../plugin.ts';
import { registerAgentIdentityRoutes } from './agent-identities.ts';
import { registerIdentityRoutes } from './routes.ts';

export const identityModule: AppModule = {
  name: 'identity',
  async api(app, ctx) {
    await registerIdentityRoutes(app, ctx);
    await registerAgentIdentityRoutes(app, ctx);
  },
  // A revocation on another process (shared PostgreSQL) reaches this one through the bus: drop the cache.
  async start(ctx) {
    const unsubscribe = ctx.bus.subscribe(CREDENTIALS_REVOKED_TOPIC, () => ctx.authenticator.invalidateAll());
    return async () => unsubscribe();
  },
};
