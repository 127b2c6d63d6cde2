import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ENGINES } from '../support/db.ts';
import { startTestServer } from '../support/server.ts';
import type { TestServer } from '../support/server.ts';

describe.each(ENGINES)('/agent/identities on %s', (engine) => {
  let s: TestServer;
  let memberKey: string;
  beforeAll(async () => {
    s = await startTestServer(engine);
    memberKey = (await s.api('POST', '/api-keys', { name: 'member', role: 'member' })).body.key;
  });
  afterAll(async () => {
    await s?.close();
  });

  it('creates (201), lists, gets, updates and deletes (204, empty body) an identity', async () => {
    const created = await s.api('POST', '/agent/identities', {
      name: 'triage-bot',
      description: 'Triage',
      skills: ['a:b'],
      unknown_knob: 1,
    });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({
      name: 'triage-bot',
      available: true,
      description: 'Triage',
      skills: ['a:b'],
      unknown_knob: 1,
    });
    expect(created.body.uid).toMatch(/^agt_/);
    expect(created.body.principal_id).toMatch(/^sa_/);
    const uid = created.body.uid as string;

    expect((await s.api('GET', '/agent/identities')).body.agents.map((a: { uid: string }) => a.uid)).toContain(uid);
    expect((await s.api('GET', `/agent/identities/${uid}`)).body).toEqual(created.body);

    // null and absent members stay; empty values clear; name changes.
    const updated = await s.api('PUT', `/agent/identities/${uid}`, { name: 'triage', description: null, skills: [] });
    expect(updated.status).toBe(200);
    expect(updated.body).toMatchObject({ name: 'triage', description: 'Triage', unknown_knob: 1 });
    expect(updated.body.skills).toEqual([]); // cleared; the clients' types require the member
    expect(new Date(updated.body.updated_at).getTime()).toBeGreaterThanOrEqual(
      new Date(created.body.updated_at).getTime(),
    );

    const deleted = await s.api('DELETE', `/agent/identities/${uid}`);
    expect(deleted.status).toBe(204);
    expect(deleted.text).toBe('');
    expect((await s.api('GET', `/agent/identities/${uid}`)).status).toBe(404);
    expect((await s.api('DELETE', `/agent/identities/${uid}`)).status).toBe(404);
    expect((await s.api('PUT', `/agent/identities/${uid}`, { name: 'x' })).status).toBe(404);
  });

  it('filters the list by factory_uid', async () => {
    await s.api('POST', '/agent/identities', { name: 'f1-bot', factory_uid: 'fac_1' });
    const listed = await s.api('GET', '/agent/identities?factory_uid=fac_1');
    expect(listed.body.agents.map((a: { name: string }) => a.name)).toEqual(['f1-bot']);
  });

  it('issues API keys for the identity; deleting the identity revokes them at once', async () => {
    const agent = (await s.api('POST', '/agent/identities', { name: 'keyed-bot' })).body;
    const key = await s.api('POST', '/api-keys', { name: 'bot key', principal_id: agent.principal_id });
    expect(key.status).toBe(201);
    const whoami = await s.api('GET', '/whoami', undefined, key.body.key);
    expect(whoami.body.principal).toMatchObject({
      uid: agent.principal_id,
      type: 'service_account',
      display_name: 'keyed-bot',
    });
    const run = await s.api('POST', '/agent/runs', { prompt: 'by the bot' }, key.body.key);
    expect((await s.api('GET', `/agent/runs/${run.body.run_id}`)).body.creator).toMatchObject({
      type: 'service_account',
      uid: agent.principal_id,
    });
    expect((await s.api('DELETE', `/agent/identities/${agent.uid}`)).status).toBe(204);
    expect((await s.api('GET', '/whoami', undefined, key.body.key)).status).toBe(401);
  });

  it('lets members read but only admins write, and validates the name', async () => {
    expect((await s.api('GET', '/agent/identities', undefined, memberKey)).status).toBe(200);
    const refused = await s.api('POST', '/agent/identities', { name: 'nope' }, memberKey);
    expect(refused.status).toBe(403);
    expect(refused.body.code).toBe('not_authorized');
    const noName = await s.api('POST', '/agent/identities', {});
    expect(noName.status).toBe(400);
    expect(noName.body.detail).toMatch(/name/);
  });
});
