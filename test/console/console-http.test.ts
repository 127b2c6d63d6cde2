import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ENGINES } from '../support/db.ts';
import { startTestServer } from '../support/server.ts';
import type { TestServer } from '../support/server.ts';
import { escapeHtml, html } from '../../src/console/html.ts';
import { baseFiles } from '../support/factory-tree.ts';

interface Page {
  status: number;
  headers: Headers;
  text: string;
}

async function get(server: TestServer, path: string, cookie?: string): Promise<Page> {
  const res = await fetch(`${server.url}${path}`, { headers: cookie ? { cookie } : {}, redirect: 'manual' });
  return { status: res.status, headers: res.headers, text: await res.text() };
}

async function postForm(
  server: TestServer,
  path: string,
  form: Record<string, string>,
  cookie?: string,
): Promise<Page> {
  const res = await fetch(`${server.url}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', ...(cookie ? { cookie } : {}) },
    body: new URLSearchParams(form).toString(),
    redirect: 'manual',
  });
  return { status: res.status, headers: res.headers, text: await res.text() };
}

async function signIn(server: TestServer, key: string): Promise<{ cookie: string; csrf: string }> {
  const res = await postForm(server, '/console/sign-in', { api_key: key });
  expect(res.status).toBe(303);
  const cookie = res.headers.get('set-cookie')!.split(';')[0]!;
  const overview = await get(server, '/', cookie);
  const csrf = /name="csrf" value="([^"]+)"/.exec(overview.text)![1]!;
  return { cookie, csrf };
}

describe('console html escaping', () => {
  it('escapes every interpolated value and keeps nested templates as they are', () => {
    const hostile = `<script>alert("x")</script>' onload='x`;
    expect(html`<p title="${hostile}">${hostile}</p>`.text).toBe(
      `<p title="${escapeHtml(hostile)}">${escapeHtml(hostile)}</p>`,
    );
    expect(html`<ul>${['<a>', html`<li>ok</li>`]}</ul>`.text).toBe('<ul>&lt;a&gt;<li>ok</li></ul>');
  });
});

describe.each(ENGINES)('the console over HTTP on %s', (engine) => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer(engine);
  });
  afterAll(async () => server?.close());

  it('shows the sign-in form at / without a session, with one password field, under a strict CSP', async () => {
    const page = await get(server, '/');
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toMatch(/text\/html/);
    expect(page.text.match(/<input[^>]+type="(text|password)"/g)).toHaveLength(1);
    const csp = page.headers.get('content-security-policy')!;
    expect(csp).toContain("default-src 'self'");
    expect(csp).toContain("script-src 'self'");
    expect(csp).not.toContain('unsafe-inline');
    expect(page.text).not.toMatch(/<script>|<style>| style=| on[a-z]+=/);
  });

  it('refuses a wrong key and signs in with a right one as an httpOnly, SameSite=Strict cookie', async () => {
    const wrong = await postForm(server, '/console/sign-in', { api_key: 'ay_wrong' });
    expect(wrong.status).toBe(401);
    expect(wrong.text).toContain('invalid, expired or revoked');
    const res = await postForm(server, '/console/sign-in', { api_key: server.adminKey });
    expect(res.status).toBe(303);
    const cookie = res.headers.get('set-cookie')!;
    expect(cookie).toMatch(/HttpOnly/);
    expect(cookie).toMatch(/SameSite=Strict/);
    expect(cookie).toMatch(/Max-Age=\d+/);
    expect(cookie).not.toMatch(/Secure/); // plain HTTP on loopback
    expect(cookie).not.toContain(server.adminKey);
    const overview = await get(server, '/', cookie.split(';')[0]);
    expect(overview.text).toContain('<h1>Factories</h1>');
    expect(overview.text).toContain('instance admin');
  });

  it('refuses a form without the session CSRF token and signs out with it', async () => {
    const { cookie, csrf } = await signIn(server, server.adminKey);
    const forged = await postForm(server, '/console/sign-out', { csrf: 'forged' }, cookie);
    expect(forged.status).toBe(403);
    const out = await postForm(server, '/console/sign-out', { csrf }, cookie);
    expect(out.status).toBe(303);
    expect(out.headers.get('set-cookie')).toMatch(/Max-Age=0/);
    expect((await get(server, '/console/runs')).status).toBe(303);
    const tampered = `${cookie.slice(0, -4)}AAAA`;
    expect((await get(server, '/', tampered)).text).toContain('Sign in');
  });

  it('renders hostile names as text and links each factory to its page', async () => {
    const { cookie } = await signIn(server, server.adminKey);
    const created = await server.api('POST', '/factories', { name: 'evil-factory' });
    expect(created.status).toBe(201);
    const hostilePrompt = '<img src=x onerror=alert(1)>';
    const run = await server.api('POST', '/agent/runs', { prompt: hostilePrompt, config: { name: '<b>bold</b>' } });
    expect(run.status).toBeLessThan(300);
    const overview = await get(server, '/', cookie);
    expect(overview.text).toContain(`href="/console/factories/${created.body.id}"`);
    const runPage = await get(server, `/console/runs/${run.body.run_id}`, cookie);
    expect(runPage.status).toBe(200);
    expect(runPage.text).toContain(escapeHtml(hostilePrompt));
    expect(runPage.text).not.toContain(hostilePrompt);
    expect((await get(server, '/console/runs/run_nosuch', cookie)).status).toBe(404);

    // the run's session link opens its console page for someone signed in, the bare page for anyone else
    const link = new URL((await server.api('GET', `/agent/runs/${run.body.run_id}`)).body.session_link as string);
    const viaLink = await get(server, link.pathname + link.search, cookie);
    expect(viaLink.status).toBe(303);
    expect(viaLink.headers.get('location')).toBe(`/console/runs/${run.body.run_id}`);
    const bare = await get(server, link.pathname + link.search);
    expect(bare.status).toBe(200);
    expect(bare.text).toContain(escapeHtml(hostilePrompt));
  });

  it('changes a managed factory through its forms, each a commit as through the API', async () => {
    const { cookie, csrf } = await signIn(server, server.adminKey);
    const created = await server.api('POST', '/factories', { name: 'managed-forms' });
    const id = created.body.id as string;
    const files = Object.entries(baseFiles()).map(([path, content]) => ({ path, content }));
    expect((await server.api('POST', `/factories/${id}/apply`, { files })).status).toBeLessThan(300);

    const made = await postForm(
      server,
      `/console/factories/${id}/webhooks`,
      { csrf, name: 'alerts', auth_mode: 'token' },
      cookie,
    );
    expect(made.status).toBe(201);
    const hooks = (await server.api('GET', `/factories/${id}/webhooks`)).body.webhooks;
    expect(hooks.map((w: { name: string }) => w.name)).toEqual(['alerts']);
    const secret = /<code class="secret">([^<]+)<\/code>/.exec(made.text)![1]!;
    const delivered = await fetch(hooks[0].ingress_url, {
      method: 'POST',
      headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json' },
      body: '{"status":"failed"}',
    });
    expect(delivered.status).toBe(202); // the secret shown once is the one in force

    const counted = await server.api('GET', `/factories/${id}?counts=true`);
    expect(counted.body.counts).toEqual({ webhooks: 1, automations: 0, schedules: 0 });
    expect((await server.api('GET', `/factories/${id}`)).body.counts).toBeUndefined();
    const listed = (await server.api('GET', '/factories?counts=true')).body.factories;
    expect(listed.find((f: { id: string }) => f.id === id).counts.webhooks).toBe(1);
    expect((await postForm(server, `/console/webhooks/${hooks[0].uid}/toggle`, { csrf }, cookie)).status).toBe(303);
    expect((await server.api('GET', `/webhooks/${hooks[0].uid}`)).body.enabled).toBe(false);
    const rotated = await postForm(server, `/console/webhooks/${hooks[0].uid}/rotate`, { csrf }, cookie);
    expect(rotated.status).toBe(200);
    expect(/<code class="secret">([^<]+)<\/code>/.exec(rotated.text)![1]).not.toBe(secret);

    const auto = await postForm(
      server,
      `/console/factories/${id}/automations`,
      { csrf, name: 'on-alert', webhook: hooks[0].uid, filter: '{"status": ["failed"]}', prompt: 'Look at it.' },
      cookie,
    );
    expect(auto.status).toBe(303);
    const automations = (await server.api('GET', `/factories/${id}/automations`)).body.automations;
    expect(automations).toHaveLength(1);
    const bad = await postForm(
      server,
      `/console/factories/${id}/automations`,
      { csrf, name: 'broken', webhook: hooks[0].uid, filter: '{not json', prompt: 'x' },
      cookie,
    );
    expect(bad.status).toBe(422);
    expect(bad.text).toContain('not JSON');

    const edited = await postForm(
      server,
      `/console/automations/${automations[0].id}`,
      { csrf, prompt: 'Look closer.' },
      cookie,
    );
    expect(edited.status).toBe(303);
    const after = (await server.api('GET', `/automations/${automations[0].id}`)).body;
    expect(after.prompt.trim()).toBe('Look closer.');
    expect(after.enabled).toBe(false);
    expect((await postForm(server, `/console/automations/${automations[0].id}/delete`, { csrf }, cookie)).status).toBe(
      303,
    );
    expect((await postForm(server, `/console/webhooks/${hooks[0].uid}/delete`, { csrf }, cookie)).status).toBe(303);
    expect((await server.api('GET', `/factories/${id}/webhooks`)).body.webhooks).toEqual([]);
    const history = (await server.api('GET', `/factories/${id}/applies`)).body.applies;
    expect(history.length).toBeGreaterThanOrEqual(7);
  });

  it('shows a factory made through a console form in the runs filter at once', async () => {
    const { cookie, csrf } = await signIn(server, server.adminKey);
    expect((await get(server, '/console/runs', cookie)).text).not.toContain('filter-probe');
    const made = await postForm(server, '/console/factories', { csrf, name: 'filter-probe' }, cookie);
    expect(made.status).toBe(303);
    const runs = await get(server, '/console/runs', cookie);
    expect(runs.text).toMatch(/<option value="fac_[^"]+" >filter-probe<\/option>/);
  });

  it('lists the provider connections with their events URL and last event', async () => {
    const { cookie } = await signIn(server, server.adminKey);
    const before = await get(server, '/console/integrations', cookie);
    expect(before.status).toBe(200);
    expect(before.text.match(/not connected/g)).toHaveLength(3);
    await server.api('PUT', '/secrets/slack-signing', { value: 'signing-secret' });
    await server.api('PUT', '/secrets/slack-bot', { value: 'xoxb-bot' });
    const put = await server.api('PUT', '/integrations/slack', {
      signing_secret_name: 'slack-signing',
      bot_token_secret_name: 'slack-bot',
    });
    expect(put.status).toBe(200);
    const after = await get(server, '/console/integrations', cookie);
    expect(after.text.match(/not connected/g)).toHaveLength(2);
    expect(after.text).toContain(escapeHtml(put.body.events_url));
    expect(after.text).not.toContain('xoxb-bot');
  });

  it('shows a member only its own team and no admin forms', async () => {
    const team = await server.api('POST', '/teams', { name: 'other-team' });
    expect(team.status).toBe(201);
    const otherAdmin = team.body.admin_key?.key ?? team.body.api_key?.key ?? team.body.key;
    expect(typeof otherAdmin).toBe('string');
    const foreign = await server.api('POST', '/factories', { name: 'foreign' }, otherAdmin);
    expect(foreign.status).toBe(201);
    const member = await server.api('POST', '/api-keys', { name: 'member', role: 'member' });
    expect(member.status).toBe(201);
    const { cookie } = await signIn(server, member.body.key);
    const overview = await get(server, '/', cookie);
    expect(overview.text).not.toContain('foreign');
    expect(overview.text).toContain('member');
    expect((await get(server, `/console/factories/${foreign.body.id}`, cookie)).status).toBe(404);
    const own = await server.api('POST', '/factories', { name: 'own' });
    const page = await get(server, `/console/factories/${own.body.id}`, cookie);
    expect(page.status).toBe(200);
    expect(page.text).not.toContain('New webhook');

    // revoking the key ends the session at the next page
    expect((await server.api('DELETE', `/api-keys/${member.body.id}`)).status).toBeLessThan(300);
    const after = await get(server, '/', cookie);
    expect(after.status).toBe(303);
    expect(after.headers.get('set-cookie')).toMatch(/Max-Age=0/);
  });
});
