/**
 * The public dry-run validation has a per-client budget (AGENTYARD_VALIDATE_RATE_LIMIT requests per minute):
 * beyond it, 429 `rate_limited` with Retry-After; the cached schema routes are not counted.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.ts';
import { ENGINES } from '../support/db.ts';
import { request, startTestServer } from '../support/server.ts';
import type { TestServer } from '../support/server.ts';
import { tree } from './support.ts';

describe('AGENTYARD_VALIDATE_RATE_LIMIT', () => {
  it('is 30 per minute unless set; 0 turns the limit off; anything else is refused at start', () => {
    expect(loadConfig({}).validateRateLimit).toBe(30);
    expect(loadConfig({ AGENTYARD_VALIDATE_RATE_LIMIT: '5' }).validateRateLimit).toBe(5);
    expect(loadConfig({ AGENTYARD_VALIDATE_RATE_LIMIT: '0' }).validateRateLimit).toBe(0);
    expect(() => loadConfig({ AGENTYARD_VALIDATE_RATE_LIMIT: 'lots' })).toThrow(/AGENTYARD_VALIDATE_RATE_LIMIT/);
  });
});

describe.each(ENGINES)('the validation rate limit on %s', (engine) => {
  let limited: TestServer;
  let unlimited: TestServer;
  beforeAll(async () => {
    [limited, unlimited] = await Promise.all([
      startTestServer(engine, { config: { validateRateLimit: 3 } }),
      startTestServer(engine, { config: { validateRateLimit: 0 } }),
    ]);
  });
  afterAll(async () => {
    await Promise.all([limited?.close(), unlimited?.close()]);
  });

  const validate = (s: TestServer, headers: Record<string, string> = {}) =>
    request(`${s.apiUrl}/factory-files/validate`, { method: 'POST', body: { files: tree() }, headers });

  it('answers 429 rate_limited with Retry-After once a client has spent its budget, and counts no schema reads', async () => {
    for (let i = 0; i < 3; i++) {
      expect((await request(`${limited.apiUrl}/factory-files/schemas`)).status).toBe(200);
      const ok = await validate(limited);
      expect(ok.status, ok.text).toBe(200);
      expect(ok.body.valid).toBe(true);
    }
    const refused = await validate(limited);
    expect(refused.status).toBe(429);
    expect(refused.headers.get('content-type')).toMatch(/^application\/problem\+json/);
    expect(refused.body).toMatchObject({ code: 'rate_limited', status: 429, retryable: true });
    expect(refused.body.detail).toMatch(/more than 3 requests per 60 s from this client; retry in \d+ s/);
    const retryAfter = Number(refused.headers.get('retry-after'));
    expect(Number.isInteger(retryAfter) && retryAfter >= 1 && retryAfter <= 60).toBe(true);
    // A key does not buy a second budget: the client is its address.
    expect((await validate(limited, { authorization: `Bearer ${limited.adminKey}` })).status).toBe(429);
    // Refused before the body is read: even a malformed one gets the 429.
    expect(
      (
        await request(`${limited.apiUrl}/factory-files/validate`, {
          method: 'POST',
          body: '{',
          headers: { 'content-type': 'application/json' },
        })
      ).status,
    ).toBe(429);
    // The cached schema routes stay open.
    expect((await request(`${limited.apiUrl}/factory-files/schemas`)).status).toBe(200);
  });

  it('takes any number of validations when the limit is 0', async () => {
    for (let i = 0; i < 35; i++) expect((await validate(unlimited)).status).toBe(200);
  });
});
