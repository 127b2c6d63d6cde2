import { loadConfig } from '../config.ts';
import { createLogger } from '../log.ts';
import { MODULES } from '../modules.ts';
import { startServer } from '../server.ts';
import { openPglite } from '../store/pglite.ts';

/** The OpenAPI 3.1 document, generated from the route schemas of every module (committed as docs/openapi.json). */
export async function renderOpenApi(): Promise<string> {
  const db = await openPglite({});
  const config = loadConfig({}, { publicUrl: 'http://localhost:8080', dataDir: '/nonexistent-agentyard-openapi' });
  const server = await startServer(config, { db, listen: false, log: createLogger('silent'), modules: MODULES.map((m) => ({ ...m, start: undefined })) });
  try {
    return `${JSON.stringify(server.app.swagger(), null, 2)}\n`;
  } finally {
    await server.stop();
    await db.close();
  }
}
