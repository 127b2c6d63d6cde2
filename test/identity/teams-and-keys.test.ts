import { CREDENTIALS_REVOKED_TOPIC } from '../../src/kernel/topics.ts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ENGINES } from '../support/db.ts';
import { request, startTestServer } from '../support/server.ts';
import type { TestServer } from '../support/server.ts';

describe.each(ENGINES)('teams and API keys on %s', (engine) => {
  let s: TestServer;
  beforeAll(async () => {
    s = await startTestServer(engine);
  });
  afterAll(async () => {
    await s?.close();
  });

  it("creates a team with the instance admin key; the answer holds the team's first admin key, once", async () => {
    const created = await s.api('POST', '/teams', {
      name: 'platform',
      admin_name: 'Ada',
      admin_email: 'ada@example.com',
    });
    expect(created.status).toBe(201);
    expect(created.body.team).toMatchObject({ name: 'platform' });
    expect(created.body.team.id).toMatch(/^team_/);
    const key = created.body.admin_key.key as string;
    expect(key).toMatch(/^ayk_/);
    expect(created.body.admin_key).toMatchObject({ role: 'admin', instance_admin: false, prefix: key.slice(0, 12) });
    const whoami = await s.api('GET', '/whoami', undefined, key);
    expect(whoami.body).toMatchObject({
      team: { id: created.body.team.id, name: 'platform' },
      principal: { type: 'user', display_name: 'Ada', email: 'ada@example.com' },
      role: 'admin',
      instance_admin: false,
    });
    // The key is never shown again.
    const keys = await s.api('GET', '/api-keys', undefined, key);
    expect(keys.text).not.toContain(key);
    expect(keys.body.api_keys).toHaveLength(1);
    expect((await s.api('GET', '/teams')).body.teams.map((t: { name: string }) => t.name)).toEqual([
      'default',
      'platform',
    ]);
    // A team admin is not an instance admin.
    expect((await s.api('POST', '/teams', { name: 'other' }, key)).status).toBe(403);
    expect((await s.api('GET', '/teams', undefined, key)).status).toBe(403);
    const duplicate = await s.api('POST', '/teams', { name: 'platform' });
    expect(duplicate.status).toBe(409);
    expect(duplicate.headers.get('x-should-retry')).toBe('false');
    expect((await s.api('POST', '/teams', { name: '' })).body.detail).toMatch(/name/);
  });

  it('lists keys by prefix only, never the key or its hash', async () => {
    const created = await s.api('POST', '/api-keys', { name: 'ci', role: 'member' });
    expect(created.status).toBe(201);
    const key = created.body.key as string;
    const listed = await s.api('GET', '/api-keys');
    const entry = listed.body.api_keys.find((k: { id: string }) => k.id === created.body.id);
    expect(entry).toMatchObject({ name: 'ci', role: 'member', prefix: key.slice(0, 12), revoked_at: null });
    expect(entry.key).toBeUndefined();
    expect(listed.text).not.toContain(key);
    expect(listed.text).not.toMatch(/[0-9a-f]{64}/);
  });

  it('answers 401 at once after a revocation, also on another process sharing the database', async () => {
    const created = await s.api('POST', '/api-keys', { name: 'short-lived' });
    const key = created.body.key as string;
    let other: TestServer | undefined;
    if (engine === 'postgres')
      other = await startTestServer(engine, { database: s.database, config: { bootstrapApiKey: s.adminKey } });
    try {
      expect((await s.api('GET', '/agent/runs', undefined, key)).status).toBe(200);
      if (other) expect((await other.api('GET', '/agent/runs', undefined, key)).status).toBe(200);
      const heard = other
        ? new Promise<void>((resolve) => {
            const off = other!.server.ctx.bus.subscribe(CREDENTIALS_REVOKED_TOPIC, () => {
              off();
              resolve();
            });
          })
        : Promise.resolve();
      const revoked = await s.api('DELETE', `/api-keys/${created.body.id}`);
      expect(revoked.status).toBe(200);
      expect(revoked.body.revoked_at).not.toBeNull();
      const refused = await s.api('GET', '/agent/runs', undefined, key);
      expect(refused.status).toBe(401);
      expect(refused.body).toMatchObject({ code: 'authentication_required', retryable: false });
      await heard;
      if (other) expect((await other.api('GET', '/agent/runs', undefined, key)).status).toBe(401);
      // Revoking twice keeps the first time.
      const again = await s.api('DELETE', `/api-keys/${created.body.id}`);
      expect(again.body.revoked_at).toBe(revoked.body.revoked_at);
    } finally {
      await other?.close();
    }
  });

  it('refuses expired keys and missing or malformed Authorization headers', async () => {
    const expired = await s.api('POST', '/api-keys', { name: 'old', expires_at: '2000-01-01T00:00:00Z' });
    expect((await s.api('GET', '/agent/runs', undefined, expired.body.key)).status).toBe(401);
    const anonymous = await request(`${s.apiUrl}/agent/runs`);
    expect(anonymous.status).toBe(401);
    expect(anonymous.body.detail).toMatch(/Authorization: Bearer/);
    const basic = await request(`${s.apiUrl}/agent/runs`, { headers: { authorization: 'Basic abc' } });
    expect(basic.status).toBe(401);
  });

  it('lets members use the Run API but not manage keys; admins manage keys', async () => {
    const member = (await s.api('POST', '/api-keys', { name: 'member', role: 'member' })).body.key as string;
    expect((await s.api('POST', '/agent/runs', { prompt: 'member run' }, member)).status).toBe(200);
    expect((await s.api('GET', '/agent/runs', undefined, member)).status).toBe(200);
    for (const [method, path, body] of [
      ['GET', '/api-keys', undefined],
      ['POST', '/api-keys', { name: 'x' }],
      ['DELETE', '/api-keys/key_whatever', undefined],
      ['POST', '/teams', { name: 'x' }],
    ] as const) {
      const res = await s.api(method, path, body, member);
      expect(res.status, `${method} ${path}`).toBe(403);
      expect(res.body.code).toBe('not_authorized');
    }
    const whoami = await s.api('GET', '/whoami', undefined, member);
    expect(whoami.body).toMatchObject({
      role: 'member',
      principal: { type: 'service_account', display_name: 'member' },
    });
  });

  it('creates keys for an existing principal of the team only', async () => {
    const foreign = await s.api('POST', '/teams', { name: `foreign-${engine}` });
    const foreignPrincipal = (await s.api('GET', '/whoami', undefined, foreign.body.admin_key.key)).body.principal.uid;
    const res = await s.api('POST', '/api-keys', { name: 'steal', principal_id: foreignPrincipal });
    expect(res.status).toBe(404);
  });
});
