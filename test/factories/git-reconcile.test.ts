import { WEBHOOKS_CHANGED_TOPIC } from '../../src/kernel/topics.ts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ENGINES } from '../support/db.ts';
import { startTestServer } from '../support/server.ts';
import type { TestServer } from '../support/server.ts';
import { asFileList, automationMd, baseFiles, webhookYaml } from './fixtures.ts';
import { createGitFactory } from './support.ts';
import type { GitFactory } from './support.ts';

describe.each(ENGINES)('git reconciler on %s', (engine) => {
  let server: TestServer;
  const factories: GitFactory[] = [];
  const webhookEvents: unknown[] = [];

  beforeAll(async () => {
    server = await startTestServer(engine);
    server.server.ctx.bus.subscribe(WEBHOOKS_CHANGED_TOPIC, (data) => webhookEvents.push(data));
    expect((await server.api('PUT', '/secrets/alerts-token', { value: 'token-one' })).status).toBe(201);
  });
  afterAll(async () => {
    for (const f of factories) f.remote.close();
    await server?.close();
  });

  async function factory(files?: Record<string, string>): Promise<GitFactory> {
    const f = await createGitFactory(server, files);
    factories.push(f);
    return f;
  }

  const decrypt = (sealed: Uint8Array | null): string | null =>
    sealed ? server.server.ctx.cipher.decrypt(sealed) : null;

  it('applies commits to the production branch, not to other branches', async () => {
    const f = await factory({ ...baseFiles(), 'webhooks/alerts.yaml': webhookYaml('alerts-token') });
    // The loop applied the initial tree when the factory was created; a sync finds nothing new.
    const first = await f.sync();
    expect(first).toMatchObject({ result: 'unchanged', reason: 'Applied', status: { state: 'applied', ready: true } });
    const [hook] = await f.webhooks();
    expect(hook).toMatchObject({ name: 'alerts', file: 'webhooks/alerts.yaml', auth_mode: 'token', enabled: true });
    expect(hook.uid).toMatch(/^wh_[0-9a-z]{26}$/);
    expect(hook.ingress_url).toBe(`${server.url}/webhooks/w/${hook.uid}`);

    await f.commit({ 'webhooks/feature.yaml': webhookYaml('alerts-token') }, 'feature work', { branch: 'feature' });
    const again = await f.sync();
    expect(again.result).toBe('unchanged');
    expect(again.revision).toBe(first.revision);
    expect((await f.webhooks()).map((w: { name: string }) => w.name)).toEqual(['alerts']);

    const history = await f.applies();
    expect(history.map((a: { result: string }) => a.result)).toEqual(['unchanged', 'unchanged', 'applied']);
    expect(history[2]).toMatchObject({
      result: 'applied',
      revision: first.revision,
      trigger: 'start',
      commit: { author: 'Ada Lovelace <ada@example.com>', message: 'initial tree' },
    });
    expect(history[0]).toMatchObject({ result: 'unchanged', revision: first.revision, trigger: 'sync' });
  });

  it('refuses a bad commit with file and line while the old webhook stays live, then applies the fix', async () => {
    const f = await factory({ ...baseFiles(), 'webhooks/alerts.yaml': webhookYaml('alerts-token') });
    const good = await f.sync();
    const [before] = await f.rows();

    const bad = await f.commit(
      { 'webhooks/alerts.yaml': 'authMode: token\nsecretName: alerts-token\nenabeld: false\n' },
      'typo',
    );
    const refused = await f.sync();
    expect(refused).toMatchObject({ result: 'failed', revision: bad, reason: 'ValidationFailed' });
    expect(refused.errors).toContainEqual(
      expect.objectContaining({
        file: 'webhooks/alerts.yaml',
        line: 3,
        column: 1,
        code: 'FF_UNKNOWN_FIELD',
        severity: 'error',
      }),
    );
    expect(refused.errors.find((e: { code: string }) => e.code === 'FF_UNKNOWN_FIELD').message).toContain('enabled');

    const status = await f.status();
    expect(status).toMatchObject({
      state: 'failed',
      stalled: true,
      reason: 'ValidationFailed',
      applied_revision: good.revision,
      attempted_revision: bad,
    });
    expect(status.message).toMatch(
      new RegExp(`^validate ${bad.replace(/[@:]/g, '.')}: 1 error; first: webhooks/alerts.yaml:3:1 FF_UNKNOWN_FIELD`),
    );
    expect(status.errors).toEqual(refused.errors);
    const [during] = await f.rows();
    expect(during).toMatchObject({ uid: before!.uid, enabled: true, deleted_at: null });
    expect(during!.updated_at).toEqual(before!.updated_at);

    // The poller does not try the refused revision again.
    const recorded = (await f.applies()).length;
    expect((await f.poll()).result).toBe('skipped');
    expect((await f.applies()).length).toBe(recorded);

    const fixed = await f.commit(
      { 'webhooks/alerts.yaml': webhookYaml('alerts-token', { enabled: false }) },
      'fix the typo',
    );
    expect(server.server.services.routing?.get(before!.uid)).toBeDefined();
    const applied = await f.sync();
    // The sync answers once this process's ingress no longer serves the disabled webhook.
    expect(server.server.services.routing?.get(before!.uid)).toBeUndefined();
    expect(applied).toMatchObject({ result: 'applied', revision: fixed, status: { state: 'applied', errors: [] } });
    expect(applied.changes).toContainEqual({
      kind: 'webhook',
      name: 'alerts',
      file: 'webhooks/alerts.yaml',
      action: 'updated',
      uid: before!.uid,
      fields: ['enabled'],
    });
    const [after] = await f.rows();
    expect(after).toMatchObject({ uid: before!.uid, enabled: false });
  });

  it('a trigger names its webhook by file name: one tree works on its first commit, on two factories', async () => {
    const tree = {
      ...baseFiles(),
      'webhooks/alerts.yaml': webhookYaml('alerts-token'),
      'automations/triage/automation.md': automationMd('alerts'),
    };
    const one = await factory(tree);
    const two = await factory(tree);
    const uids: string[] = [];
    for (const f of [one, two]) {
      // Applied when the factory was created: the first commit already holds the automation.
      expect(await f.status()).toMatchObject({ state: 'applied', errors: [] });
      const [hook] = await f.webhooks();
      uids.push(hook.uid);
      const [automation] = (await server.api('GET', `/factories/${f.id}/automations`)).body.automations;
      // Stored as the UID it resolved to, for the ingress and the API alike.
      expect(automation.triggers[0].filter.webhook_ids).toEqual([hook.uid]);
      const rows = await server.server.ctx.db.query<{ webhook_uid: string }>(
        'SELECT webhook_uid FROM automation_webhook_triggers WHERE automation_id = $1',
        [automation.id],
      );
      expect(rows.rows).toEqual([{ webhook_uid: hook.uid }]);
    }
    expect(uids[0]).not.toBe(uids[1]);

    // The UID form names the same webhook: switching to it changes nothing live.
    await one.commit({ 'automations/triage/automation.md': automationMd(uids[0]!) }, 'by uid');
    const byUid = await one.sync();
    expect(byUid.result).toBe('applied');
    expect(byUid.changes.filter((c: { kind: string }) => c.kind === 'automation')).toEqual([]);
    // Another factory's UID is not this factory's webhook.
    await one.commit({ 'automations/triage/automation.md': automationMd(uids[1]!) }, 'foreign uid');
    const foreign = await one.sync();
    expect(foreign.status.state).toBe('failed');
    expect(foreign.status.message).toContain(`no webhook of this factory has the UID ${uids[1]}`);

    // A dry run of a tree naming a webhook that does not exist yet: valid, and the plan creates both.
    const plan = await server.api('POST', `/factories/${two.id}/plan`, {
      files: asFileList({
        ...tree,
        'webhooks/deploys.yaml': webhookYaml('alerts-token'),
        'automations/deploys/automation.md': automationMd('deploys'),
      }),
    });
    expect(plan.status, plan.text).toBe(200);
    expect(plan.body.valid).toBe(true);
    expect(plan.body.changes).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ kind: 'webhook', name: 'deploys', action: 'created' }),
        expect.objectContaining({ kind: 'automation', name: 'deploys', action: 'created' }),
      ]),
    );
  });

  it('applies automations with their webhook triggers, and soft-deletes the webhook of a removed file', async () => {
    const f = await factory({
      ...baseFiles(),
      'webhooks/alerts.yaml': webhookYaml('alerts-token'),
      'webhooks/deploys.yaml': webhookYaml('alerts-token'),
    });
    await f.sync();
    const hooks = await f.webhooks();
    const alerts = hooks.find((h: { name: string }) => h.name === 'alerts');
    const deploys = hooks.find((h: { name: string }) => h.name === 'deploys');

    await f.commit({ 'automations/triage/automation.md': automationMd(alerts.uid) }, 'add triage');
    const withAutomation = await f.sync();
    expect(withAutomation.result).toBe('applied');
    const automations = (await server.api('GET', `/factories/${f.id}/automations`)).body.automations;
    expect(automations).toHaveLength(1);
    expect(automations[0]).toMatchObject({
      name: 'triage',
      file: 'automations/triage/automation.md',
      enabled: true,
      agent: 'foreman',
      prompt: 'Investigate the alert in event-payload.json.',
      config: { name: 'triage', model_id: 'auto', worker_host: 'build-box-1', runner_id: 'default' },
      triggers: [
        {
          provider: 'webhook',
          event: 'received',
          filter: { webhook_ids: [alerts.uid], payload: { severity: ['critical', 'high'] } },
        },
      ],
    });
    const triggers = await server.server.ctx.db.query(
      'SELECT * FROM automation_webhook_triggers WHERE automation_id = $1',
      [automations[0].id],
    );
    expect(triggers.rows).toEqual([
      {
        automation_id: automations[0].id,
        webhook_uid: alerts.uid,
        trigger_index: 0,
        payload_filter: { severity: ['critical', 'high'] },
      },
    ]);

    webhookEvents.length = 0;
    await f.commit({}, 'drop deploys', { remove: ['webhooks/deploys.yaml'] });
    const removed = await f.sync();
    expect(removed.changes).toContainEqual({
      kind: 'webhook',
      name: 'deploys',
      file: 'webhooks/deploys.yaml',
      action: 'deleted',
      uid: deploys.uid,
    });
    expect((await f.webhooks()).map((h: { uid: string }) => h.uid)).toEqual([alerts.uid]);
    const row = (await f.rows()).find((r) => r.uid === deploys.uid)!;
    expect(row.deleted_at).toBeInstanceOf(Date);
    expect(webhookEvents).toEqual([{ factory_id: f.id }]);
  });

  it('takes a new secret value only at the next apply (rule 5)', async () => {
    await server.api('PUT', '/secrets/rotating', { value: 'value-one' });
    const f = await factory({ ...baseFiles(), 'webhooks/alerts.yaml': webhookYaml('rotating') });
    await f.sync();
    const [first] = await f.rows();
    expect(decrypt(first!.secret_ciphertext)).toBe('value-one');

    await server.api('PUT', '/secrets/rotating', { value: 'value-two' });
    expect((await f.sync()).result).toBe('unchanged');
    const [unchanged] = await f.rows();
    expect(decrypt(unchanged!.secret_ciphertext)).toBe('value-one');
    expect(unchanged!.secret_version).toBe(first!.secret_version);

    await f.commit({ 'README.md': 'Any change to the production branch applies the definition again.\n' }, 'docs');
    const applied = await f.sync();
    expect(applied.result).toBe('applied');
    expect(applied.changes).toContainEqual({
      kind: 'webhook',
      name: 'alerts',
      file: 'webhooks/alerts.yaml',
      action: 'updated',
      uid: first!.uid,
      fields: ['secret'],
    });
    expect(JSON.stringify(applied)).not.toContain('value-two');
    const [after] = await f.rows();
    expect(decrypt(after!.secret_ciphertext)).toBe('value-two');
    expect(after!.secret_version).toBe(first!.secret_version + 1);
    expect(after!.uid).toBe(first!.uid);
  });

  it('refuses a webhook whose secret does not exist or is not URL-safe for url_token', async () => {
    await server.api('PUT', '/secrets/not-url-safe', { value: 'has space/and slash' });
    const f = await factory({
      ...baseFiles(),
      'webhooks/missing.yaml': webhookYaml('no-such-secret'),
      'webhooks/url.yaml': webhookYaml('not-url-safe', { authMode: 'url_token' }),
    });
    const refused = await f.sync();
    expect(refused.result).toBe('failed');
    expect(refused.errors).toEqual(
      expect.arrayContaining([
        expect.objectContaining({
          file: 'webhooks/missing.yaml',
          line: 2,
          code: 'FF_INVALID_REFERENCE',
          message: 'no managed secret named `no-such-secret`',
        }),
        expect.objectContaining({ file: 'webhooks/url.yaml', line: 2, code: 'FF_INVALID_VALUE' }),
      ]),
    );
    expect(await f.rows()).toEqual([]);
    expect((await f.status()).state).toBe('failed');
  });

  it('applies the same revision once: a second sync is a no-op without events', async () => {
    const f = await factory({ ...baseFiles(), 'webhooks/alerts.yaml': webhookYaml('alerts-token') });
    const first = await f.sync();
    const [row] = await f.rows();
    webhookEvents.length = 0;
    const second = await f.sync();
    expect(second).toMatchObject({ result: 'unchanged', revision: first.revision, changes: [] });
    expect((await f.poll()).result).toBe('skipped');
    expect(webhookEvents).toEqual([]);
    const [same] = await f.rows();
    expect(same!.updated_at).toEqual(row!.updated_at);
  });

  it('treats a rename as delete plus create and warns about triggers naming the old UID', async () => {
    const f = await factory({ ...baseFiles(), 'webhooks/alerts.yaml': webhookYaml('alerts-token') });
    await f.sync();
    const [old] = await f.webhooks();
    await f.commit({ 'automations/triage/automation.md': automationMd(old.uid) }, 'triage');
    await f.sync();

    const plan = await server.api('POST', `/factories/${f.id}/plan`, {
      files: Object.entries({
        ...baseFiles(),
        'webhooks/alerts-v2.yaml': webhookYaml('alerts-token'),
        'automations/triage/automation.md': automationMd(old.uid),
      }).map(([path, content]) => ({ path, content })),
    });
    expect(plan.status).toBe(200);
    expect(plan.body.valid).toBe(true);
    expect(plan.body.changes).toEqual(
      expect.arrayContaining([
        { kind: 'webhook', name: 'alerts', file: 'webhooks/alerts.yaml', action: 'deleted', uid: old.uid },
        {
          kind: 'webhook',
          name: 'alerts-v2',
          file: 'webhooks/alerts-v2.yaml',
          action: 'created',
          uid: null,
          detail: 'renamed from webhooks/alerts.yaml: a new webhook with a new UID',
        },
      ]),
    );
    expect(plan.body.warnings.map((w: { code: string }) => w.code).sort()).toEqual([
      'trigger_stops_firing',
      'webhook_renamed',
    ]);
    const stops = plan.body.warnings.find((w: { code: string }) => w.code === 'trigger_stops_firing');
    expect(stops).toMatchObject({
      file: 'automations/triage/automation.md',
      line: 6,
      path: '/triggers/0/filter/webhook_ids/0',
    });
    expect(stops.message).toContain(old.uid);

    await f.commit({ 'webhooks/alerts-v2.yaml': webhookYaml('alerts-token') }, 'rename', {
      remove: ['webhooks/alerts.yaml'],
    });
    const applied = await f.sync();
    expect(applied.result).toBe('applied');
    expect(applied.warnings.map((w: { code: string }) => w.code).sort()).toEqual([
      'trigger_stops_firing',
      'webhook_renamed',
    ]);
    const [renamed] = await f.webhooks();
    expect(renamed.name).toBe('alerts-v2');
    expect(renamed.uid).not.toBe(old.uid);
    expect((await f.rows()).find((r) => r.uid === old.uid)!.deleted_at).not.toBeNull();

    // The trigger still names the deleted UID: valid, never fires, and every later plan says so.
    await f.commit({ 'README.md': 'x\n' }, 'later');
    const later = await f.sync();
    expect(later.warnings).toEqual([
      expect.objectContaining({ code: 'trigger_names_deleted_webhook', file: 'automations/triage/automation.md' }),
    ]);

    // A UID this factory never had is an error.
    await f.commit(
      { 'automations/triage/automation.md': automationMd('wh_01jz8k2m3n4p5q6r7s8t9v0w1x') },
      'unknown uid',
    );
    const unknown = await f.sync();
    expect(unknown.result).toBe('failed');
    expect(unknown.errors).toContainEqual(
      expect.objectContaining({ file: 'automations/triage/automation.md', line: 6, code: 'FF_INVALID_REFERENCE' }),
    );
  });

  it('refuses an automatic apply that deletes every webhook and automation; an explicit sync applies it', async () => {
    const f = await factory({ ...baseFiles(), 'webhooks/alerts.yaml': webhookYaml('alerts-token') });
    await f.sync();
    const revision = await f.commit({}, 'remove everything', { remove: ['webhooks'] });
    const blocked = await f.poll();
    expect(blocked).toMatchObject({ result: 'failed', revision, reason: 'DeletionBlocked' });
    expect(blocked.message).toContain('would delete every webhook and automation');
    expect(await f.webhooks()).toHaveLength(1);
    expect((await f.poll()).result).toBe('skipped');
    const applied = await f.sync();
    expect(applied).toMatchObject({ result: 'applied', revision });
    expect(await f.webhooks()).toHaveLength(0);
  });

  it('answers factory_read_only to writes of a repository-backed factory', async () => {
    const f = await factory();
    const res = await server.api('POST', `/factories/${f.id}/apply`, { files: [] });
    expect(res.status).toBe(409);
    expect(res.body.code).toBe('factory_read_only');
    expect(res.body.detail).toContain(f.remote.bare);
    expect(res.body.detail).toContain('branch main');
    expect(res.body.source).toEqual({ type: 'git', url: f.remote.bare, branch: 'main' });
    expect(res.headers.get('x-should-retry')).toBe('false');
  });

  it('reads a sub-path, and reports source failures in the status without touching live state', async () => {
    const f = await createGitFactory(
      server,
      {
        'factories/prod/factory.yaml': baseFiles()['factory.yaml']!,
        ...Object.fromEntries(Object.entries(baseFiles()).map(([p, c]) => [`factories/prod/${p}`, c])),
      },
      { path: 'factories/prod' },
    );
    factories.push(f);
    expect((await f.status()).state).toBe('applied');
    const wrong = await server.api('POST', '/factories', {
      name: `missing-branch-${Date.now()}`,
      source: { type: 'git', url: f.remote.bare, branch: 'release', poll_interval_seconds: 0 },
    });
    const sync = await server.api('POST', `/factories/${wrong.body.id}/sync`);
    expect(sync.body).toMatchObject({ result: 'failed', reason: 'BranchNotFound' });
    const status = (await server.api('GET', `/factories/${wrong.body.id}`)).body.status;
    expect(status).toMatchObject({
      state: 'pending',
      ready: false,
      stalled: true,
      source_error: { reason: 'BranchNotFound', kind: 'terminal' },
    });

    const noCreds = await server.api('POST', '/factories', {
      name: `no-creds-${Date.now()}`,
      source: {
        type: 'git',
        url: 'https://example.invalid/acme/factory.git',
        credentials_secret: 'nope',
        poll_interval_seconds: 0,
      },
    });
    const failed = await server.api('POST', `/factories/${noCreds.body.id}/sync`);
    expect(failed.body).toMatchObject({ result: 'failed', reason: 'CredentialsNotFound' });
  });
});
