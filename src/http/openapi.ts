import { loadConfig } from '../config.ts';
import { createLogger } from '../log.ts';
import { MODULES } from '../modules.ts';
import { startServer } from '../server.ts';
import { openPglite } from '../store/pglite.ts';

/** Sorts the members of every object (arrays keep their order), so that the output is the same on every run. */
function sortKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sortKeys);
  if (value && typeof value === 'object') {
    return Object.fromEntries(
      Object.keys(value)
        .sort()
        .map((k) => [k, sortKeys((value as Record<string, unknown>)[k])]),
    );
  }
  return value;
}

/**
 * The OpenAPI 3.1 document, generated from the route schemas of every module (committed as docs/openapi.json;
 * `npm run openapi` rewrites it). Deterministic: object members are sorted, and nothing depends on the
 * machine, the clock or the data directory.
 */
export async function renderOpenApi(): Promise<string> {
  const db = await openPglite({});
  // An in-memory database and fixed keys: rendering writes no file (no admin.key, no master.key).
  const config = loadConfig(
    {},
    {
      publicUrl: 'http://localhost:8080',
      dataDir: '/nonexistent-agentyard-openapi',
      masterKey: '0'.repeat(64),
      bootstrapApiKey: 'ayk_openapi-render-only',
      agentModels: undefined,
    },
  );
  const server = await startServer(config, {
    db,
    listen: false,
    log: createLogger('silent'),
    modules: MODULES.map((m) => ({ ...m, start: undefined })),
  });
  try {
    return `${JSON.stringify(sortKeys(server.app.swagger()), null, 2)}\n`;
  } finally {
    await server.stop();
    await db.close();
  }
}
