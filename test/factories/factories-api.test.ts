import { WEBHOOKS_CHANGED_TOPIC } from '../../src/kernel/topics.ts';
import { createHmac } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ENGINES } from '../support/db.ts';
import { request, startTestServer } from '../support/server.ts';
import type { TestServer } from '../support/server.ts';
import { createGitRemote } from '../sources/git-fixture.ts';
import type { GitRemote } from '../sources/git-fixture.ts';
import { asFileList, baseFiles, webhookYaml } from './fixtures.ts';
import { whenFactoryTold } from './support.ts';

describe.each(ENGINES)('factory API on %s', (engine) => {
  let server: TestServer;
  let memberKey: string;
  let managedId: string;
  const remotes: GitRemote[] = [];

  beforeAll(async () => {
    server = await startTestServer(engine);
    memberKey = (await server.api('POST', '/api-keys', { name: 'member', role: 'member' })).body.key;
    await server.api('PUT', '/secrets/alerts-token', { value: 'tok' });
    await server.api('PUT', '/secrets/url-token', { value: 'abc-DEF_123.~' });
    const created = await server.api('POST', '/factories', { name: 'ops' });
    managedId = created.body.id;
    const applied = await server.api('POST', `/factories/${managedId}/apply`, {
      files: asFileList({
        ...baseFiles(),
        'webhooks/alerts.yaml': webhookYaml('alerts-token'),
        'webhooks/by-url.yaml': webhookYaml('url-token', { authMode: 'url_token' }),
      }),
    });
    expect(applied.status, applied.text).toBe(200);
  });
  afterAll(async () => {
    for (const r of remotes) r.close();
    await server?.close();
  });

  it('validates creation: names, duplicates, roles and sources', async () => {
    expect((await server.api('POST', '/factories', { name: '-bad' })).status).toBe(400);
    const dup = await server.api('POST', '/factories', { name: 'ops' });
    expect(dup.status).toBe(409);
    expect(dup.body.code).toBe('factory_name_taken');
    expect((await server.api('POST', '/factories', { name: 'by-member' }, memberKey)).status).toBe(403);
    const withPassword = await server.api('POST', '/factories', {
      name: 'pw',
      source: { type: 'git', url: 'https://bot:hunter2@github.com/a/b.git' },
    });
    expect(withPassword.status).toBe(400);
    expect(withPassword.text).not.toContain('hunter2');
    const ext = await server.api('POST', '/factories', { name: 'ext', source: { type: 'git', url: 'ext::sh -c id' } });
    expect(ext.status).toBe(400);
    const git = await server.api('POST', '/factories', {
      name: 'gitty',
      source: { type: 'git', url: 'https://github.com/acme/factory.git', poll_interval_seconds: 0 },
    });
    expect(git.status).toBe(201);
    expect(git.body).toMatchObject({
      name: 'gitty',
      read_only: true,
      source: {
        type: 'git',
        url: 'https://github.com/acme/factory.git',
        branch: 'main',
        path: null,
        poll_interval_seconds: 0,
        credentials_secret: null,
        push_secret: null,
      },
      status: { state: 'pending', applied_revision: null, errors: [] },
    });
    expect((await server.api('GET', '/factories/fac_nope')).status).toBe(404);
  });

  it('lists factories with cursor pagination', async () => {
    for (const name of ['page-a', 'page-b', 'page-c']) await server.api('POST', '/factories', { name });
    const seen: string[] = [];
    let cursor: string | undefined;
    do {
      const page = await server.api('GET', `/factories?limit=2${cursor ? `&cursor=${cursor}` : ''}`);
      expect(page.status).toBe(200);
      expect(page.body.factories.length).toBeLessThanOrEqual(2);
      seen.push(...page.body.factories.map((f: { name: string }) => f.name));
      cursor = page.body.page_info.next_cursor;
    } while (cursor);
    expect(seen).toEqual(expect.arrayContaining(['ops', 'page-a', 'page-b', 'page-c']));
    expect(new Set(seen).size).toBe(seen.length);
    expect((await server.api('GET', '/factories?cursor=garbage')).status).toBe(400);
  });

  it('shows webhooks with ingress URLs (a url_token URL ends in a {token} placeholder)', async () => {
    const hooks = (await server.api('GET', `/factories/${managedId}/webhooks`, undefined, memberKey)).body.webhooks;
    const byUrl = hooks.find((h: { name: string }) => h.name === 'by-url');
    const token = hooks.find((h: { name: string }) => h.name === 'alerts');
    expect(byUrl.ingress_url).toBe(`${server.url}/webhooks/w/${byUrl.uid}/{token}`);
    expect(token).toMatchObject({
      auth_mode: 'token',
      secret_name: 'alerts-token',
      ingress_url: `${server.url}/webhooks/w/${token.uid}`,
    });
    expect(JSON.stringify(hooks)).not.toContain('abc-DEF');
  });

  it('sends work to a factory: a FACTORY run with the definition defaults', async () => {
    const res = await server.api(
      'POST',
      `/factories/${managedId}/runs`,
      { prompt: 'Triage the open alerts', config: { idle_timeout_minutes: 5 } },
      memberKey,
    );
    expect(res.status, res.text).toBe(200);
    expect(res.body).toMatchObject({ state: 'QUEUED', factory_id: managedId });
    const run = (await server.api('GET', `/agent/runs/${res.body.run_id}`)).body;
    expect(run).toMatchObject({
      source: 'API',
      source_detail: 'FACTORY',
      factory_uid: managedId,
      prompt: 'Triage the open alerts',
      worker_host: 'build-box-1',
      agent_config: {
        name: 'foreman',
        model_id: 'auto',
        worker_host: 'build-box-1',
        runner_id: 'default',
        idle_timeout_minutes: 5,
      },
    });
    expect(run.agent_config.base_prompt).toContain('on-call foreman');

    const pending = await server.api('POST', '/factories', {
      name: 'never-fetched',
      source: { type: 'git', url: 'file:///nonexistent/factory.git', poll_interval_seconds: 0 },
    });
    const refused = await server.api('POST', `/factories/${pending.body.id}/runs`, { prompt: 'x' });
    expect(refused.status).toBe(409);
  });

  it('answers the product factory API shapes', async () => {
    const list = (await server.api('GET', '/factory?search=alert')).body;
    expect(list.factories.map((f: { uid: string }) => f.uid)).toEqual([managedId]);
    const factory = (await server.api('GET', `/factory/${managedId}`)).body;
    expect(factory).toMatchObject({
      uid: managedId,
      name: 'Alert triage',
      repositories: [{ owner: 'acme', repo: 'api', code_forge: 'GITHUB' }],
      agent_defaults: {
        default_runner_uid: 'default',
        worker_host: 'build-box-1',
        harness: { type: 'oz', model_id: 'auto' },
      },
      default_model: 'auto',
      integrations: null,
    });
    const run = await server.api('POST', `/factory/${managedId}/runs`, {
      prompt: 'Look at the alerts',
      ticket_ref: 'linear:ABC-1',
    });
    expect(run.status).toBe(200);
    expect(run.body).toMatchObject({
      factory_uid: managedId,
      foreman_agent: 'foreman',
      state: 'QUEUED',
      ticket_ref: 'linear:ABC-1',
    });
    expect(run.body.run_url).toMatch(/\/sessions\//);
    expect((await server.api('POST', `/factory/${managedId}/runs`, { prompt: '  ' })).status).toBe(400);
  });

  it('syncs a git factory on a signed push notification, and only for the production branch', async () => {
    const remote = await createGitRemote();
    remotes.push(remote);
    await remote.write(baseFiles());
    await remote.commitAndPush('initial');
    await server.api('PUT', '/secrets/push-secret', { value: 'push-s3cret' });
    const created = await server.api('POST', '/factories', {
      name: 'pushed',
      source: { type: 'git', url: remote.bare, poll_interval_seconds: 0, push_secret: 'push-secret' },
    });
    const id = created.body.id as string;
    expect(created.body.push_hook_url).toBe(`${server.url}/api/v1/factories/${id}/sync/push`);
    await whenFactoryTold(
      server,
      async () => (await server.api('GET', `/factories/${id}`)).body.status.state === 'applied',
      'the first apply',
    );

    await remote.write({ 'webhooks/alerts.yaml': webhookYaml('alerts-token') });
    const sha = await remote.commitAndPush('add a webhook');
    const body = JSON.stringify({ ref: 'refs/heads/main', after: sha });
    const sign = (text: string, secret = 'push-s3cret') =>
      `sha256=${createHmac('sha256', secret).update(text).digest('hex')}`;
    const hookUrl = created.body.push_hook_url as string;

    const forged = await request(hookUrl, {
      method: 'POST',
      body,
      headers: {
        'content-type': 'application/json',
        'x-github-event': 'push',
        'x-hub-signature-256': sign(body, 'wrong'),
      },
    });
    expect(forged.status).toBe(401);
    const other = JSON.stringify({ ref: 'refs/heads/feature' });
    const ignored = await request(hookUrl, {
      method: 'POST',
      body: other,
      headers: { 'content-type': 'application/json', 'x-hub-signature-256': sign(other) },
    });
    expect(ignored.status).toBe(202);
    expect(ignored.body.result).toBe('ignored');

    const push = await request(hookUrl, {
      method: 'POST',
      body,
      headers: { 'content-type': 'application/json', 'x-github-event': 'push', 'x-hub-signature-256': sign(body) },
    });
    expect(push.status).toBe(202);
    expect(push.body.result).toBe('queued');
    await whenFactoryTold(
      server,
      async () => (await server.api('GET', `/factories/${id}`)).body.status.applied_revision === `main@sha1:${sha}`,
      `the pushed revision ${sha} applied`,
    );
    const [entry] = (await server.api('GET', `/factories/${id}/applies`)).body.applies;
    expect(entry).toMatchObject({ trigger: 'push', result: 'applied' });

    const gitlab = await request(hookUrl, {
      method: 'POST',
      body,
      headers: { 'content-type': 'application/json', 'x-gitlab-token': 'push-s3cret' },
    });
    expect(gitlab.status).toBe(202);
    const noHook = await request(`${server.apiUrl}/factories/${managedId}/sync/push`, {
      method: 'POST',
      body,
      headers: { authorization: 'Bearer push-s3cret' },
    });
    expect(noHook.status).toBe(404);
  });

  it('pages through the apply history newest first', async () => {
    for (let i = 0; i < 3; i++) {
      await server.api('POST', `/factories/${managedId}/apply`, {
        files: asFileList({
          ...baseFiles(),
          'webhooks/alerts.yaml': webhookYaml('alerts-token', { extra: `# revision ${i}\n` }),
        }),
      });
    }
    const first = (await server.api('GET', `/factories/${managedId}/applies?limit=2`)).body;
    expect(first.applies).toHaveLength(2);
    expect(first.page_info.has_next_page).toBe(true);
    const second = (
      await server.api('GET', `/factories/${managedId}/applies?limit=2&cursor=${first.page_info.next_cursor}`)
    ).body;
    const all = [...first.applies, ...second.applies];
    expect(new Set(all.map((a: { id: string }) => a.id)).size).toBe(all.length);
    const times = all.map((a: { started_at: string }) => a.started_at);
    expect([...times].sort().reverse()).toEqual(times);
  });

  it('deletes a factory: its webhooks stop at once and keep their rows', async () => {
    const created = await server.api('POST', '/factories', { name: 'doomed' });
    const id = created.body.id as string;
    await server.api('POST', `/factories/${id}/apply`, {
      files: asFileList({ ...baseFiles(), 'webhooks/alerts.yaml': webhookYaml('alerts-token') }),
    });
    const events: unknown[] = [];
    const unsubscribe = server.server.ctx.bus.subscribe(WEBHOOKS_CHANGED_TOPIC, (d) => events.push(d));
    expect((await server.api('DELETE', `/factories/${id}`, undefined, memberKey)).status).toBe(403);
    const res = await server.api('DELETE', `/factories/${id}`);
    unsubscribe();
    expect(res.body).toEqual({ id, deleted: true });
    expect(events).toContainEqual({ factory_id: id });
    expect((await server.api('GET', `/factories/${id}`)).status).toBe(404);
    const rows = await server.server.ctx.db.query<{ deleted_at: Date | null }>(
      'SELECT deleted_at FROM webhooks WHERE factory_id = $1',
      [id],
    );
    expect(rows.rows).toHaveLength(1);
    expect(rows.rows[0]!.deleted_at).toBeInstanceOf(Date);
    // The name can be used again.
    expect((await server.api('POST', '/factories', { name: 'doomed' })).status).toBe(201);
  });
});
