import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ENGINES } from '../support/db.ts';
import { startTestServer } from '../support/server.ts';
import type { TestServer } from '../support/server.ts';
import { DatabaseSecretProvider } from '../../src/secrets/provider.ts';

describe.each(ENGINES)('managed secrets API on %s', (engine) => {
  let server: TestServer;
  let memberKey: string;

  beforeAll(async () => {
    server = await startTestServer(engine);
    const created = await server.api('POST', '/api-keys', { name: 'member', role: 'member' });
    expect(created.status).toBe(201);
    memberKey = created.body.key;
  });
  afterAll(async () => server?.close());

  it('creates, replaces, lists without values and deletes', async () => {
    const first = await server.api('PUT', '/secrets/alerts-token', { value: 's3cret-one' });
    expect(first.status).toBe(201);
    expect(first.body).toEqual({
      name: 'alerts-token',
      // the principal whose key wrote it owns it
      created_by: (await server.api('GET', '/whoami')).body.principal.uid,
      created_at: expect.any(String),
      updated_at: expect.any(String),
    });
    const again = await server.api('PUT', '/secrets/alerts-token', { value: 's3cret-two' });
    expect(again.status).toBe(200);
    expect(again.body.created_at).toBe(first.body.created_at);

    const list = await server.api('GET', '/secrets');
    expect(list.status).toBe(200);
    expect(list.body.secrets.map((s: { name: string }) => s.name)).toEqual(['alerts-token']);
    expect(list.text).not.toContain('s3cret');

    const provider = new DatabaseSecretProvider(server.server.ctx.db, server.server.ctx.cipher);
    const teamId = (await server.api('GET', '/whoami')).body.team.id;
    expect(await provider.get(teamId, 'alerts-token')).toBe('s3cret-two');
    expect(await provider.get(teamId, 'missing')).toBeUndefined();

    // Stored encrypted: the plaintext is not in the row.
    const row = await server.server.ctx.db.query<{ ciphertext: Uint8Array }>(
      'SELECT ciphertext FROM secrets WHERE name = $1',
      ['alerts-token'],
    );
    expect(Buffer.from(row.rows[0]!.ciphertext).toString('latin1')).not.toContain('s3cret');

    const deleted = await server.api('DELETE', '/secrets/alerts-token');
    expect(deleted.status).toBe(200);
    expect((await server.api('DELETE', '/secrets/alerts-token')).body.code).toBe('secret_not_found');
    expect(await provider.get(teamId, 'alerts-token')).toBeUndefined();
  });

  it('refuses bad names and empty values', async () => {
    const bad = await server.api('PUT', '/secrets/-bad', { value: 'x' });
    expect(bad.status).toBe(400);
    expect(bad.body.detail).toContain('-bad');
    expect((await server.api('PUT', '/secrets/ok', { value: '' })).status).toBe(400);
    expect((await server.api('PUT', '/secrets/ok', {})).status).toBe(400);
  });

  it('lets members list but only admins write', async () => {
    expect((await server.api('GET', '/secrets', undefined, memberKey)).status).toBe(200);
    const put = await server.api('PUT', '/secrets/by-member', { value: 'v' }, memberKey);
    expect(put.status).toBe(403);
    expect(put.body.code).toBe('not_authorized');
  });

  it('keeps teams apart', async () => {
    await server.api('PUT', '/secrets/shared-name', { value: 'team-a' });
    const team = await server.api('POST', '/teams', { name: 'other' });
    const otherKey = team.body.admin_key.key;
    expect((await server.api('GET', '/secrets', undefined, otherKey)).body.secrets).toEqual([]);
    expect((await server.api('GET', '/secrets/shared-name', undefined, otherKey)).status).toBe(404);
  });
});
