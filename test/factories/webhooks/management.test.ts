/**
 * Webhooks of managed factories through the API: every write is a definition-file change (visible in
 * GET /factories/{id}/definition), secrets are shown once, and deliveries follow each change at once.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Webhook as StandardWebhook } from 'standardwebhooks';
import Stripe from 'stripe';
import { parse } from 'yaml';
import { ENGINES } from '../../support/db.ts';
import { startTestServer } from '../../support/server.ts';
import type { TestServer } from '../../support/server.ts';
import { baseFiles } from '../fixtures.ts';
import { createGitFactory, createManagedFactory } from '../support.ts';
import { deliveriesOf, post } from '../../ingress/support.ts';

const stripe = new Stripe('sk_test_not_used_offline');

async function fileOf(server: TestServer, factoryId: string, path: string): Promise<string | undefined> {
  const definition = (await server.api('GET', `/factories/${factoryId}/definition`)).body;
  return definition.files.find((f: { path: string }) => f.path === path)?.content;
}

function standardSigned(secret: string, body: string) {
  const at = new Date();
  const id = `msg_${randomBytes(6).toString('hex')}`;
  return {
    'webhook-id': id,
    'webhook-timestamp': String(Math.floor(at.getTime() / 1000)),
    'webhook-signature': new StandardWebhook(secret).sign(id, at, body),
  };
}

describe.each(ENGINES)('webhook management on managed factories on %s', (engine) => {
  let server: TestServer;
  let factoryId: string;
  beforeAll(async () => {
    server = await startTestServer(engine);
    factoryId = await createManagedFactory(server);
  });
  afterAll(async () => server?.close());

  it('creates a token webhook as a file, shows its secret once, and takes deliveries with it', async () => {
    const res = await server.api('POST', `/factories/${factoryId}/webhooks`, {
      name: 'alerts',
      delivery_id_header: 'X-Event-Id',
    });
    expect(res.status, res.text).toBe(201);
    expect(res.body).toMatchObject({
      name: 'alerts',
      auth_mode: 'token',
      secret_name: 'webhook-alerts',
      enabled: true,
      state: 'enabled',
      has_secret: true,
      file: 'webhooks/alerts.yaml',
    });
    expect(res.body.uid).toMatch(/^wh_[0-9a-z]{26}$/);
    expect(res.body.ingress_url).toBe(`${server.url}/webhooks/w/${res.body.uid}`);
    const secret = res.body.secret as string;
    expect(secret.length).toBeGreaterThanOrEqual(40);

    expect(parse((await fileOf(server, factoryId, 'webhooks/alerts.yaml'))!)).toEqual({
      authMode: 'token',
      secretName: 'webhook-alerts',
      deliveryIdHeader: 'X-Event-Id',
      enabled: true,
    });
    const fetched = await server.api('GET', `/webhooks/${res.body.uid}`);
    expect(fetched.body).not.toHaveProperty('secret');
    expect(
      (await server.api('GET', `/factories/${factoryId}/webhooks`)).body.webhooks.map((w: { uid: string }) => w.uid),
    ).toContain(res.body.uid);

    const delivered = await post(res.body.ingress_url, '{"a":1}', {
      authorization: `Bearer ${secret}`,
      'x-event-id': 'e-1',
    });
    expect(delivered.status).toBe(202);
    expect((await deliveriesOf(server, res.body.uid))[0]).toMatchObject({
      identity: 'e-1',
      identity_source: 'delivery_id_header',
    });
  });

  it('url_token: the URL with the token is shown once; afterwards only a {token} placeholder', async () => {
    const res = await server.api('POST', `/factories/${factoryId}/webhooks`, {
      name: 'deploys',
      auth_mode: 'url_token',
    });
    expect(res.status, res.text).toBe(201);
    expect(res.body.ingress_url).toBe(`${server.url}/webhooks/w/${res.body.uid}/{token}`);
    expect(res.body.ingress_url_with_token).toBe(`${server.url}/webhooks/w/${res.body.uid}/${res.body.secret}`);
    expect(res.body.secret).toMatch(/^[A-Za-z0-9._~-]+$/);
    expect((await post(res.body.ingress_url_with_token, '{"deploy":1}')).status).toBe(202);
    expect((await server.api('GET', `/webhooks/${res.body.uid}`)).body).not.toHaveProperty('ingress_url_with_token');
  });

  it('signature, Standard Webhooks: a blank secret is generated (whsec_) and shown once', async () => {
    const res = await server.api('POST', `/factories/${factoryId}/webhooks`, {
      name: 'svix-sender',
      auth_mode: 'signature',
      signature_scheme: 'standard_webhooks',
    });
    expect(res.status, res.text).toBe(201);
    expect(res.body.secret).toMatch(/^whsec_/);
    const body = '{"type":"user.created"}';
    expect((await post(res.body.ingress_url, body, standardSigned(res.body.secret, body))).status).toBe(202);
  });

  it('signature, a provider that issues its secret later: refused (auth) until rotate-secret sets it', async () => {
    const res = await server.api('POST', `/factories/${factoryId}/webhooks`, {
      name: 'payments',
      auth_mode: 'signature',
      signature_scheme: 'stripe',
    });
    expect(res.status, res.text).toBe(201);
    expect(res.body).not.toHaveProperty('secret');
    expect(res.body.has_secret).toBe(false);
    const body = '{"id":"evt_1","type":"invoice.paid"}';
    const early = await post(res.body.ingress_url, body, {
      'stripe-signature': stripe.webhooks.generateTestHeaderString({ payload: body, secret: 'whsec_anything' }),
    });
    expect(early.status).toBe(401);
    expect(early.body.detail).toContain('no secret yet');

    const providerSecret = `whsec_${randomBytes(16).toString('hex')}`;
    const rotated = await server.api('POST', `/webhooks/${res.body.uid}/rotate-secret`, { secret: providerSecret });
    expect(rotated.status, rotated.text).toBe(200);
    expect(rotated.body).toMatchObject({ has_secret: true, secret: providerSecret });
    const signed = await post(res.body.ingress_url, body, {
      'stripe-signature': stripe.webhooks.generateTestHeaderString({ payload: body, secret: providerSecret }),
    });
    expect(signed.status).toBe(202);

    expect((await server.api('POST', `/webhooks/${res.body.uid}/rotate-secret`, {})).body.code).toBe('invalid_request');
  });

  it('references an existing team secret without showing its value', async () => {
    expect((await server.api('PUT', '/secrets/shared-hook-token', { value: 'shared-value-123' })).status).toBeLessThan(
      300,
    );
    const res = await server.api('POST', `/factories/${factoryId}/webhooks`, {
      name: 'shared',
      secret_name: 'shared-hook-token',
    });
    expect(res.status, res.text).toBe(201);
    expect(res.body).not.toHaveProperty('secret');
    expect(res.body.secret_name).toBe('shared-hook-token');
    expect((await post(res.body.ingress_url, '{}', { authorization: 'Bearer shared-value-123' })).status).toBe(202);
  });

  it('refuses bad input with a code that names the field', async () => {
    const cases: [unknown, number, string][] = [
      [{ name: 'x1', auth_mode: 'signature' }, 400, 'signature_scheme'],
      [{ name: 'x2', auth_mode: 'signature', signature_scheme: 'nope' }, 400, 'signature_scheme'],
      [{ name: 'x3', secret: 'mine' }, 400, 'secret'],
      [{ name: 'bad name!' }, 400, 'name'],
      [
        { name: 'x4', auth_mode: 'signature', signature_scheme: 'standard_webhooks', secret: 'not-base64!' },
        400,
        'secret',
      ],
      [{ name: 'alerts' }, 409, 'alerts'],
    ];
    for (const [body, status, mention] of cases) {
      const res = await server.api('POST', `/factories/${factoryId}/webhooks`, body);
      expect(res.status, JSON.stringify(body)).toBe(status);
      expect(res.body.detail).toContain(mention);
    }
    expect((await server.api('POST', `/factories/${factoryId}/webhooks`, { name: 'alerts' })).body.code).toBe(
      'webhook_name_taken',
    );
  });

  it('disable answers 404 at once and enable resumes, each a file change; rename is refused', async () => {
    const created = (await server.api('POST', `/factories/${factoryId}/webhooks`, { name: 'toggled' })).body;
    const auth = { authorization: `Bearer ${created.secret}` };
    const off = await server.api('PATCH', `/webhooks/${created.uid}`, { enabled: false });
    expect(off.status, off.text).toBe(200);
    expect(off.body).toMatchObject({ enabled: false, state: 'disabled' });
    expect(parse((await fileOf(server, factoryId, 'webhooks/toggled.yaml'))!).enabled).toBe(false);
    expect((await post(created.ingress_url, '{"n":1}', auth)).status).toBe(404);
    const on = await server.api('PATCH', `/webhooks/${created.uid}`, { enabled: true });
    expect(on.body.state).toBe('enabled');
    expect((await post(created.ingress_url, '{"n":2}', auth)).status).toBe(202);

    const rename = await server.api('PATCH', `/webhooks/${created.uid}`, { name: 'renamed' });
    expect(rename.status).toBe(422);
    expect(rename.body.code).toBe('webhook_rename_unsupported');
  });

  it('rotation: the new secret works at once, the old one never again, and a later apply keeps the new one', async () => {
    const created = (await server.api('POST', `/factories/${factoryId}/webhooks`, { name: 'rotated' })).body;
    const rotated = await server.api('POST', `/webhooks/${created.uid}/rotate-secret`);
    expect(rotated.status, rotated.text).toBe(200);
    expect(rotated.body.secret).not.toBe(created.secret);
    expect((await post(created.ingress_url, '{"old":1}', { authorization: `Bearer ${created.secret}` })).status).toBe(
      401,
    );
    expect(
      (await post(created.ingress_url, '{"new":1}', { authorization: `Bearer ${rotated.body.secret}` })).status,
    ).toBe(202);
    await server.api('PATCH', `/webhooks/${created.uid}`, { delivery_id_header: 'X-Id' });
    expect(
      (await post(created.ingress_url, '{"new":2}', { authorization: `Bearer ${rotated.body.secret}` })).status,
    ).toBe(202);
    expect((await post(created.ingress_url, '{"old":2}', { authorization: `Bearer ${created.secret}` })).status).toBe(
      401,
    );
  });

  it('delete answers 404 at once and keeps the history', async () => {
    const created = (await server.api('POST', `/factories/${factoryId}/webhooks`, { name: 'doomed' })).body;
    const auth = { authorization: `Bearer ${created.secret}` };
    expect((await post(created.ingress_url, '{"n":1}', auth)).status).toBe(202);
    const deleted = await server.api('DELETE', `/webhooks/${created.uid}`);
    expect(deleted.status).toBe(204);
    expect((await post(created.ingress_url, '{"n":2}', auth)).status).toBe(404);
    expect(await fileOf(server, factoryId, 'webhooks/doomed.yaml')).toBeUndefined();
    expect((await server.api('GET', `/webhooks/${created.uid}`)).body).toMatchObject({
      state: 'deleted',
      deleted_at: expect.any(String),
    });
    expect((await server.api('GET', `/webhooks/${created.uid}/deliveries`)).body.deliveries).toHaveLength(1);
    expect((await server.api('PATCH', `/webhooks/${created.uid}`, { enabled: true })).status).toBe(404);
  });

  it('refuses the 21st webhook of a factory with webhook_limit_reached', async () => {
    const id = await createManagedFactory(server);
    for (let i = 1; i <= 20; i++) {
      const res = await server.api('POST', `/factories/${id}/webhooks`, { name: `hook-${i}` });
      expect(res.status, res.text).toBe(201);
    }
    const res = await server.api('POST', `/factories/${id}/webhooks`, { name: 'hook-21' });
    expect(res.status).toBe(422);
    expect(res.body).toMatchObject({ code: 'webhook_limit_reached', detail: expect.stringContaining('at most 20') });
    expect(
      (await server.api('GET', '/secrets')).body.secrets?.map((s: { name: string }) => s.name) ?? [],
    ).not.toContain('webhook-hook-21');
  });

  it('a write a member key may not make', async () => {
    const member = (await server.api('POST', '/api-keys', { name: 'member', role: 'member' })).body.key as string;
    expect((await server.api('POST', `/factories/${factoryId}/webhooks`, { name: 'by-member' }, member)).status).toBe(
      403,
    );
  });

  it('a factory created with only a name is seeded and takes a webhook in one call', async () => {
    const created = await server.api('POST', '/factories', { name: `fresh-${randomBytes(3).toString('hex')}` });
    expect(created.status, created.text).toBe(201);
    expect(created.body.status).toMatchObject({ state: 'applied', ready: true });
    const id = created.body.id as string;
    const [seed] = (await server.api('GET', `/factories/${id}/applies`)).body.applies;
    expect(seed).toMatchObject({
      result: 'applied',
      trigger: 'managed',
      commit: { message: expect.stringContaining('default agents') },
    });
    expect(seed.changes.map((c: { kind: string; name: string }) => `${c.kind} ${c.name}`).sort()).toEqual(
      expect.arrayContaining(['agent foreman', 'agent implement', 'agent review', 'agent spec', 'agent triage']),
    );
    const files = (await server.api('GET', `/factories/${id}/definition`)).body.files.map(
      (f: { path: string }) => f.path,
    );
    expect(files).toEqual(expect.arrayContaining(['factory.yaml', 'runners/default.yaml', 'agents/foreman/agent.md']));

    const hook = await server.api('POST', `/factories/${id}/webhooks`, { name: 'first' });
    expect(hook.status, hook.text).toBe(201);
    expect((await post(hook.body.ingress_url, '{"a":1}', { authorization: `Bearer ${hook.body.secret}` })).status).toBe(
      202,
    ); // And an automation on it, run by a seeded agent, in the next call.
    const automation = await server.api('POST', `/factories/${id}/automations`, {
      name: 'on-first',
      prompt: 'Look at the delivery.',
      agent: 'triage',
      triggers: [{ provider: 'webhook', event: 'received', filter: { webhook_ids: [hook.body.uid] } }],
    });
    expect(automation.status, automation.text).toBe(201);
  });
});

describe.each(ENGINES)('webhooks of a repository-backed factory on %s', (engine) => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer(engine);
  });
  afterAll(async () => server?.close());

  it('are read-only through the API (409 factory_read_only); reads and the delivery log work', async () => {
    await server.api('PUT', '/secrets/git-hook-token', { value: 'git-token-value' });
    const git = await createGitFactory(server, {
      ...baseFiles(),
      'webhooks/from-git.yaml': 'authMode: token\nsecretName: git-hook-token\n',
    });
    const [hook] = await git.webhooks();
    expect(hook).toBeDefined();
    expect((await post(hook.ingress_url, '{"g":1}', { authorization: 'Bearer git-token-value' })).status).toBe(202);
    for (const [method, path, body] of [
      ['POST', `/factories/${git.id}/webhooks`, { name: 'new' }],
      ['PATCH', `/webhooks/${hook.uid}`, { enabled: false }],
      ['DELETE', `/webhooks/${hook.uid}`, undefined],
      ['POST', `/webhooks/${hook.uid}/rotate-secret`, {}],
    ] as const) {
      const res = await server.api(method, path, body);
      expect(res.status, `${method} ${path}`).toBe(409);
      expect(res.body.code).toBe('factory_read_only');
    }
    expect((await server.api('GET', `/webhooks/${hook.uid}`)).body.state).toBe('enabled');
    expect((await server.api('GET', `/webhooks/${hook.uid}/deliveries`)).body.deliveries).toHaveLength(1);
  });
});
