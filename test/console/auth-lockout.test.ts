/**
 * A webhook in an auth lockout says so: bad GitHub signatures over HTTP spend the sender's failed-auth budget
 * until the ingress answers 429; GET /webhooks/{uid}/lockouts then names the sender, until when and why, and the
 * webhook's console page shows it. Another team cannot read it; another webhook has none.
 */
import { createHmac } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ENGINES } from '../support/db.ts';
import { startTestServer } from '../support/server.ts';
import type { TestServer } from '../support/server.ts';
import { post } from '../ingress/support.ts';
import { get, signIn } from './support.ts';
import type { Session } from './support.ts';

const POINTS = 4;

describe.each(ENGINES)('auth lockout on the webhook page (%s)', (engine) => {
  let server: TestServer;
  let admin: Session;
  let hook: { uid: string; ingress_url: string };
  let other: { uid: string };
  let secret: string;

  beforeAll(async () => {
    server = await startTestServer(engine, { compose: { ingress: { limits: { failedAuthPoints: POINTS } } } });
    admin = await signIn(server, server.adminKey);
    const factory = await server.api('POST', '/factories', { name: 'locks' });
    const made = await server.api('POST', `/factories/${factory.body.id}/webhooks`, {
      name: 'gh',
      auth_mode: 'signature',
      signature_scheme: 'github',
    });
    expect(made.status, made.text).toBe(201);
    hook = made.body;
    secret = made.body.secret;
    const second = await server.api('POST', `/factories/${factory.body.id}/webhooks`, { name: 'quiet' });
    other = second.body;
  });
  afterAll(async () => server?.close());

  const signed = (body: string, key: string) => ({
    'content-type': 'application/json',
    'x-hub-signature-256': `sha256=${createHmac('sha256', key).update(body).digest('hex')}`,
  });

  it('shows no lockout while the budget lasts, then the sender, until when and why', async () => {
    expect((await server.api('GET', `/webhooks/${hook.uid}/lockouts`)).body).toEqual({ lockouts: [] });
    const quiet = await get(server, `/console/webhooks/${hook.uid}`, admin.cookie);
    expect(quiet.text).not.toContain('auth-lockout');

    const body = '{"action":"opened"}';
    expect((await post(hook.ingress_url, body, signed(body, secret))).status).toBe(202);
    for (let i = 0; i < POINTS; i++) {
      expect((await post(hook.ingress_url, body, signed(body, 'wrong secret'))).status).toBe(401);
    }
    const refused = await post(hook.ingress_url, body, signed(body, secret));
    expect(refused.status).toBe(429);
    expect(refused.body.code).toBe('webhook_auth_rate_limited');

    const api = await server.api('GET', `/webhooks/${hook.uid}/lockouts`);
    expect(api.status).toBe(200);
    expect(api.body.lockouts).toHaveLength(1);
    const [lockout] = api.body.lockouts;
    expect(lockout.sender_ip).toMatch(/127\.0\.0\.1/);
    const until = Date.parse(lockout.until);
    expect(until).toBeGreaterThan(Date.now());
    expect(until).toBeLessThanOrEqual(Date.now() + 600_000 + 1000);
    expect(lockout.reason).toContain(`${POINTS} failed authentications`);

    const page = await get(server, `/console/webhooks/${hook.uid}`, admin.cookie);
    expect(page.status).toBe(200);
    const box = /<section class="error" id="auth-lockout"[\s\S]*?<\/section>/.exec(page.text)?.[0] ?? '';
    expect(box).toContain('Auth lockout');
    expect(box).toContain('429');
    expect(box).toContain(lockout.sender_ip);
    expect(box).toContain(`datetime="${lockout.until}"`);
    expect(box).toContain(`${POINTS} failed authentications`);

    // the other webhook of the same sender is not locked out, and says nothing
    expect((await server.api('GET', `/webhooks/${other.uid}/lockouts`)).body.lockouts).toEqual([]);
    expect((await get(server, `/console/webhooks/${other.uid}`, admin.cookie)).text).not.toContain('auth-lockout');
  });

  it("keeps a webhook's lockouts from other teams and answers 404 for an unknown webhook", async () => {
    const team = await server.api('POST', '/teams', { name: `lock-${engine}` });
    const otherKey = team.body.admin_key?.key ?? team.body.api_key?.key ?? team.body.key;
    expect((await server.api('GET', `/webhooks/${hook.uid}/lockouts`, undefined, otherKey)).status).toBe(404);
    const missing = await server.api('GET', '/webhooks/wh_nope/lockouts');
    expect(missing.status).toBe(404);
    expect((await server.api('GET', '/integrations/slack/lockouts')).status).toBe(404);
    expect((await server.api('GET', '/integrations/nope/lockouts')).status).toBeLessThan(500);
  });
});
