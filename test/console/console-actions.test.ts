/**
 * The console's actions on the team's settings: schedules, integrations, secrets and API keys, each through the
 * JSON API with the signed-in key, each destructive one confirmed first, each answered with a redirect.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer } from '../support/server.ts';
import type { TestServer } from '../support/server.ts';
import { get, postForm, signIn } from './support.ts';
import type { Session } from './support.ts';

describe('console actions', { timeout: 60_000 }, () => {
  let server: TestServer;
  let admin: Session;

  beforeAll(async () => {
    server = await startTestServer('pglite');
    admin = await signIn(server, server.adminKey);
  }, 60_000);
  afterAll(async () => server?.close());

  it('creates, edits and deletes a schedule', async () => {
    const form = { csrf: admin.csrf, name: 'nightly', cron_schedule: '0 3 * * *', prompt: 'Tidy', enabled: 'true' };
    const bad = await postForm(server, '/console/schedules', { ...form, cron_schedule: 'every day' }, admin.cookie);
    expect(bad.status).toBe(422);
    expect(bad.text).toContain('The schedule was not created');
    const made = await postForm(server, '/console/schedules', form, admin.cookie);
    expect(made.status).toBe(303);
    expect(made.headers.get('location')).toBe('/console/schedules?done=schedule-created');
    const [schedule] = (await server.api('GET', '/agent/schedules')).body.schedules;
    expect(schedule).toMatchObject({ name: 'nightly', cron_schedule: '0 3 * * *', enabled: true });
    const page = await get(server, '/console/schedules?done=schedule-created', admin.cookie);
    expect(page.text).toContain('Schedule created.');
    expect(page.text).toContain(`action="/console/schedules/${schedule.id}"`);

    const edited = await postForm(
      server,
      `/console/schedules/${schedule.id}`,
      { csrf: admin.csrf, name: 'nightly', cron_schedule: '0 4 * * *', prompt: 'Tidy more' },
      admin.cookie,
    );
    expect(edited.status).toBe(303);
    const after = (await server.api('GET', `/agent/schedules/${schedule.id}`)).body;
    expect(after).toMatchObject({ cron_schedule: '0 4 * * *', prompt: 'Tidy more', enabled: false });

    const ask = await get(server, `/console/schedules/${schedule.id}/delete`, admin.cookie);
    expect(ask.text).toContain('Delete schedule nightly?');
    const gone = await postForm(server, `/console/schedules/${schedule.id}/delete`, { csrf: admin.csrf }, admin.cookie);
    expect(gone.headers.get('location')).toBe('/console/schedules?done=schedule-deleted');
    expect((await server.api('GET', `/agent/schedules/${schedule.id}`)).status).toBe(404);
  });

  it('sets and deletes secrets without ever showing a value', async () => {
    const value = 'very-secret-value-1234';
    const set = await postForm(server, '/console/secrets', { csrf: admin.csrf, name: 'gh-hook', value }, admin.cookie);
    expect(set.headers.get('location')).toBe('/console/secrets?done=secret-set');
    const page = await get(server, '/console/secrets?done=secret-set', admin.cookie);
    expect(page.text).toContain('<code>gh-hook</code>');
    expect(page.text).not.toContain(value);
    const bad = await postForm(
      server,
      '/console/secrets',
      { csrf: admin.csrf, name: 'bad name!', value },
      admin.cookie,
    );
    expect(bad.status).toBe(422);
    expect(bad.text).not.toContain(value);
    // connect an integration with it, then disconnect after confirming
    const connected = await postForm(
      server,
      '/console/integrations/linear',
      { csrf: admin.csrf, webhook_secret_name: 'gh-hook' },
      admin.cookie,
    );
    expect(connected.headers.get('location')).toBe('/console/integrations?done=connected');
    const linear = (await server.api('GET', '/integrations/linear')).body;
    const unsigned = await fetch(linear.events_url, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{"type":"Issue"}',
    });
    expect(unsigned.status).toBeGreaterThanOrEqual(400);
    const log = await get(server, '/console/integrations/linear/deliveries', admin.cookie);
    expect(log.status).toBe(200);
    const logged = (await server.api('GET', '/integrations/linear/deliveries')).body.deliveries;
    expect(logged.length).toBeGreaterThan(0);
    for (const d of logged) expect(log.text).toContain(`<tr id="${d.delivery_id}">`);
    expect((await get(server, '/console/integrations/nope/deliveries', admin.cookie)).status).toBe(404);
    const missing = await postForm(
      server,
      '/console/integrations/slack',
      { csrf: admin.csrf, signing_secret_name: 'no-such-secret' },
      admin.cookie,
    );
    expect(missing.status).toBe(422);
    expect((await get(server, '/console/integrations/linear/disconnect', admin.cookie)).text).toContain(
      'Disconnect linear?',
    );
    const off = await postForm(server, '/console/integrations/linear/disconnect', { csrf: admin.csrf }, admin.cookie);
    expect(off.headers.get('location')).toBe('/console/integrations?done=disconnected');
    expect((await server.api('GET', '/integrations/linear')).status).toBe(404);
    expect((await postForm(server, '/console/integrations/nope', { csrf: admin.csrf }, admin.cookie)).status).toBe(404);

    expect((await get(server, '/console/secrets/gh-hook/delete', admin.cookie)).text).toContain(
      'Delete secret gh-hook?',
    );
    const deleted = await postForm(server, '/console/secrets/gh-hook/delete', { csrf: admin.csrf }, admin.cookie);
    expect(deleted.headers.get('location')).toBe('/console/secrets?done=secret-deleted');
    expect((await server.api('GET', '/secrets/gh-hook')).status).toBe(404);
  });

  it('creates an API key shown once and revokes it after confirming', async () => {
    const made = await postForm(
      server,
      '/console/api-keys',
      { csrf: admin.csrf, name: 'ci', role: 'member' },
      admin.cookie,
    );
    expect(made.status).toBe(201);
    const key = /<code class="secret">([^<]+)<\/code>/.exec(made.text)![1]!;
    expect((await server.api('GET', '/whoami', undefined, key)).status).toBe(200);
    const list = await get(server, '/console/api-keys', admin.cookie);
    expect(list.text).not.toContain(key);
    const id = (await server.api('GET', '/api-keys')).body.api_keys.find((k: { name: string }) => k.name === 'ci').id;
    expect((await get(server, `/console/api-keys/${id}/revoke`, admin.cookie)).text).toMatch(/Revoke key ci/);
    const revoked = await postForm(server, `/console/api-keys/${id}/revoke`, { csrf: admin.csrf }, admin.cookie);
    expect(revoked.headers.get('location')).toBe('/console/api-keys?done=key-revoked');
    expect((await server.api('GET', '/whoami', undefined, key)).status).toBe(401);
  });

  it('refuses a member the admin settings, and every form without its token', async () => {
    const member = await server.api('POST', '/api-keys', { name: 'viewer', role: 'member' });
    const m = await signIn(server, member.body.key);
    const overview = await get(server, '/', m.cookie);
    expect(overview.text).not.toContain('href="/console/secrets"');
    expect((await get(server, '/console/api-keys', m.cookie)).status).toBe(403);
    const refused = await postForm(server, '/console/secrets', { csrf: m.csrf, name: 'x', value: 'y' }, m.cookie);
    expect(refused.status).toBe(422);
    expect((await server.api('GET', '/secrets/x')).status).toBe(404);
    const forged = await postForm(server, '/console/secrets', { csrf: 'wrong', name: 'x', value: 'y' }, admin.cookie);
    expect(forged.status).toBe(403);
  });
});
