/**
 * Issue 28, item 8: every list endpoint's numeric query parameter (`limit`, `minutes`, `since`) answers 400
 * naming the field for a value that is not a finite integer in range: `1e400` and `Infinity` used to pass Ajv's
 * coercion (its range checks skip non-finite numbers) and reach the database as 500s.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ENGINES } from '../support/db.ts';
import { startTestServer } from '../support/server.ts';
import type { TestServer } from '../support/server.ts';

/** Each list endpoint with its numeric parameters (path relative to /api/v1; `?` joins extra required ones). */
const ENDPOINTS: { path: string; fields: string[]; extra?: string }[] = [
  { path: '/agent/runs', fields: ['limit'] },
  { path: '/agent/tasks', fields: ['limit'] },
  { path: '/agent/events', fields: ['limit', 'since'], extra: 'run_ids=run_x' },
  { path: '/agent/runs/run_x/events', fields: ['since'], extra: 'follow=false' },
  { path: '/factories', fields: ['limit'] },
  { path: '/factory', fields: ['limit'] },
  { path: '/factories/fct_x/applies', fields: ['limit'] },
  { path: '/webhooks/wh_x/deliveries', fields: ['limit'] },
  { path: '/integrations/github/deliveries', fields: ['limit'] },
  { path: '/delivery-stats', fields: ['minutes'] },
];

const HOSTILE = ['1e400', '-1e400', 'Infinity', '-Infinity', 'NaN', '-1', '1.5', '99999999999999999999999', ''];

describe.each(ENGINES.slice(0, 1))('numeric query parameters on %s', (engine) => {
  let s: TestServer;
  beforeAll(async () => {
    s = await startTestServer(engine);
  });
  afterAll(async () => {
    await s?.close();
  });

  const cases = ENDPOINTS.flatMap((e) => e.fields.flatMap((field) => HOSTILE.map((value) => ({ ...e, field, value }))));
  it.each(cases)('$path ?$field=$value → 400 naming the field', async ({ path, field, value, extra }) => {
    const query = `${extra ? `${extra}&` : ''}${field}=${encodeURIComponent(value)}`;
    const res = await s.api('GET', `${path}?${query}`);
    expect(res.status, res.text).toBe(400);
    expect(res.body).toMatchObject({ code: 'invalid_request', status: 400 });
    expect(res.body.detail).toContain(`querystring.${field}`);
  });

  it('an in-range value is still accepted', async () => {
    expect((await s.api('GET', '/agent/runs?limit=5')).status).toBe(200);
    const stats = await s.api('GET', '/delivery-stats?minutes=10080');
    expect(stats.status, stats.text).toBe(200);
  });
});
