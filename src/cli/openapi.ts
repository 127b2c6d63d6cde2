import { compose } from '../composition.ts';
import { loadConfig } from '../config.ts';
import { Authenticator } from '../identity/service.ts';
import { Bus } from '../kernel/bus.ts';
import { createLogger } from '../log.ts';
import { SecretCipher, loadMasterKey } from '../secrets/crypto.ts';
import { openPglite } from '../store/pglite.ts';
import { buildApp } from '../http/app.ts';

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
 * The OpenAPI 3.1 document, generated from the route schemas of every route plugin (committed as docs/openapi.json;
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
  // The routes only: nothing is started, migrated or written.
  const cipher = new SecretCipher(await loadMasterKey(config.masterKey, config.dataDir));
  const ctx = {
    db,
    config,
    log: createLogger('silent'),
    authenticator: new Authenticator(db),
    bus: new Bus(db),
    cipher,
  };
  const { services, plugins } = compose(ctx);
  const app = await buildApp(services, plugins);
  try {
    await app.ready();
    return `${JSON.stringify(sortKeys(app.swagger()), null, 2)}\n`;
  } finally {
    await app.close();
    await db.close();
  }
}
