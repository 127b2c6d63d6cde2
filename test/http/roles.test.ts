/**
 * A process serves the routes of its roles: the Run API and the console only with `api`, the webhook ingress
 * only with `ingress`; health and the worker connection in every process.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseRoles } from '../../src/config.ts';
import { createTestDatabase, ENGINES } from '../support/db.ts';
import type { TestDatabase } from '../support/db.ts';
import { startTestServer } from '../support/server.ts';
import type { TestServer } from '../support/server.ts';

describe.each(ENGINES)('roles gate the routes on %s', (engine) => {
  let database: TestDatabase;
  let ingressOnly: TestServer;
  let apiOnly: TestServer;
  beforeAll(async () => {
    database = await createTestDatabase(engine);
    ingressOnly = await startTestServer(engine, { database, config: { roles: parseRoles('ingress') } });
    apiOnly = await startTestServer(engine, { database, config: { roles: parseRoles('api') } });
  }, 120_000);
  afterAll(async () => {
    await ingressOnly?.close();
    await apiOnly?.close();
    await database?.close();
  });

  it('an ingress-only process answers 404 to the Run API and the console, and serves health', async () => {
    const runs = await ingressOnly.api('POST', '/agent/runs', { prompt: 'x' });
    expect(runs.status).toBe(404);
    expect((await ingressOnly.api('GET', '/agent/runs')).status).toBe(404);
    expect((await fetch(`${ingressOnly.url}/console/overview.html`)).status).toBe(404);
    expect((await fetch(`${ingressOnly.url}/healthz`)).status).toBe(200);
  });

  it('an api-only process serves the Run API and the console, and no webhook ingress', async () => {
    const created = await apiOnly.api('POST', '/agent/runs', { prompt: 'x' });
    expect(created.status, created.text).toBe(200);
    expect((await apiOnly.api('GET', `/agent/runs/${created.body.run_id}`)).status).toBe(200);
    expect((await fetch(`${apiOnly.url}/console/overview.html`, { redirect: 'manual' })).status).not.toBe(404);
    const delivery = await fetch(`${apiOnly.url}/webhooks/w/wh_nosuchwebhook0000000000000`, {
      method: 'POST',
      body: '{}',
    });
    expect(delivery.status).toBe(404);
  });
});
