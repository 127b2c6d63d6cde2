import type { AppModule } from '../plugin.ts';
import { consoleRoutes } from './routes.ts';

export const consoleModule: AppModule = {
  name: 'console',
  async root(app, ctx) {
    await consoleRoutes(app, { cipher: ctx.cipher, secureCookies: ctx.config.publicUrl.startsWith('https:') });
  },
};
