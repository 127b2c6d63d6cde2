/**
 * The console's newer pages and states in Debian's Chromium, axe-core on each (0 serious or critical): the
 * overview's uncapped run counts refreshing live, a webhook in an auth lockout, a GitHub delivery's page with its
 * automations tested and its run, the replay confirmation and the replay's page, and a refused revision's change
 * list beside its errors. Screenshots under docs/screenshots only when asked (AGENTYARD_SCREENSHOTS=1).
 */
import { createHmac, randomBytes } from 'node:crypto';
import { sign } from '@octokit/webhooks-methods';
import examples from '@octokit/webhooks-examples/api.github.com/index.json' with { type: 'json' };
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchChromium } from '../support/chromium.ts';
import { FOREMAN, RUNNER } from '../support/factory-tree.ts';
import { startTestServer } from '../support/server.ts';
import type { TestServer } from '../support/server.ts';
import { post } from '../ingress/support.ts';
import { connectProviders } from '../integrations/connections.ts';
import { runsOfDeliveries, waitEvaluated } from '../automations/support.ts';
import { baseFiles, webhookYaml } from '../factories/fixtures.ts';
import { createGitFactory } from '../factories/support.ts';
import { overflowX, screenshot, seriousViolations, signInWithKey } from './browser-support.ts';

type Payload = Record<string, any>;

const FACTORY_YAML = `schemaVersion: v1alpha1
name: Browser states
repositories:
  - owner: Codertocat
    name: Hello-World
agentDefaults:
  model: auto
  runner: default
`;

const automation = (event: string, filter = '') => `---
triggers:
  - provider: github
    event: ${event}
${filter ? `    filter:\n      ${filter}\n` : ''}---

Handle the ${event}.
`;

describe('console states in Chromium', { timeout: 120_000 }, () => {
  let server: TestServer;
  let browser: Browser;
  let page: Page;
  const violations: string[] = [];
  const githubSecret = randomBytes(20).toString('hex');
  let urls: Record<string, string>;

  beforeAll(async () => {
    // No harness: every run stays QUEUED. Three failed authentications lock a sender out.
    server = await startTestServer('pglite', { compose: { ingress: { limits: { failedAuthPoints: 3 } } } });
    urls = await connectProviders(server, {
      github: githubSecret,
      slack: randomBytes(16).toString('hex'),
      linear: randomBytes(16).toString('hex'),
    });
    browser = await launchChromium();
    page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    await signInWithKey(page, server.url, server.adminKey);
  }, 120_000);

  afterAll(async () => {
    await browser?.close();
    await server?.close();
  });

  /** axe on the page as it is now, and nothing wider than the window at 1,280 and 390 px. */
  const checked = async () => {
    violations.push(...(await seriousViolations(page)));
    for (const width of [390, 1280]) {
      await page.setViewportSize({ width, height: 900 });
      expect(await overflowX(page), `${page.url()} at ${width} px`).toBeLessThanOrEqual(0);
    }
  };

  it('counts queued runs on the overview past 100 and refreshes the count live', async () => {
    for (let i = 0; i < 105; i += 15) {
      await Promise.all(
        Array.from({ length: 15 }, (_, j) => server.api('POST', '/agent/runs', { title: `q${i + j}`, prompt: 'x' })),
      );
    }
    await page.goto(server.url);
    const queued = page.locator('a.big[href="/console/runs?state=QUEUED"]');
    expect(await queued.textContent()).toBe('105');
    await checked();
    await screenshot(page, 'overview-counts');
    await server.api('POST', '/agent/runs', { title: 'one more', prompt: 'x' });
    // the overview refreshes its counts itself
    await queued.filter({ hasText: /^\s*106\s*$/ }).waitFor({ timeout: 20_000 });
  });

  it('says on the webhook page that a sender is locked out, until when and why', async () => {
    const factory = await server.api('POST', '/factories', { name: 'lockouts' });
    const hook = await server.api('POST', `/factories/${factory.body.id}/webhooks`, {
      name: 'gh',
      auth_mode: 'signature',
      signature_scheme: 'github',
    });
    const body = '{"zen":"hi"}';
    const bad = { 'x-hub-signature-256': `sha256=${createHmac('sha256', 'wrong').update(body).digest('hex')}` };
    for (let i = 0; i < 3; i++) expect((await post(hook.body.ingress_url, body, bad)).status).toBe(401);
    expect((await post(hook.body.ingress_url, body, bad)).status).toBe(429);
    await page.goto(`${server.url}/console/webhooks/${hook.body.uid}`);
    const box = page.locator('#auth-lockout');
    await box.waitFor();
    expect(await box.getByRole('heading').textContent()).toContain('refused with 429');
    expect(await box.textContent()).toContain('3 failed authentications');
    expect(await box.locator('time[datetime]').count()).toBeGreaterThan(0);
    await checked();
    await screenshot(page, 'webhook-lockout');
  });

  it("follows a GitHub event from the connection's log to its page, its run and back; replays it", async () => {
    const factory = await server.api('POST', '/factories', { name: 'github-pages' });
    const files = Object.entries({
      'factory.yaml': FACTORY_YAML,
      'agents/foreman/agent.md': FOREMAN,
      'runners/default.yaml': RUNNER,
      'automations/on-issue/automation.md': automation('issue_created'),
      'automations/on-bug/automation.md': automation('issue_labeled', 'labels: [bug]'),
    }).map(([path, content]) => ({ path, content }));
    expect((await server.api('POST', `/factories/${factory.body.id}/apply`, { files })).status).toBeLessThan(300);
    const payload = structuredClone(
      (examples as { name: string; examples: Payload[] }[])
        .find((e) => e.name === 'issues')!
        .examples.find((x) => x.action === 'opened')!,
    );
    payload.repository.full_name = 'Codertocat/Hello-World';
    payload.issue.author_association = 'MEMBER';
    const body = JSON.stringify(payload);
    const sent = await post(urls.github!, body, {
      'content-type': 'application/json',
      'x-github-event': 'issues',
      'x-github-delivery': 'c0ffee00-0000-4000-8000-000000000001',
      'x-hub-signature-256': await sign(githubSecret, body),
    });
    expect(sent.status, sent.text).toBe(202);
    const did = sent.body.delivery_id as string;
    await waitEvaluated(server, [did]);
    const [run] = await runsOfDeliveries(server, [did]);

    await page.goto(`${server.url}/console/integrations/github/deliveries`);
    await checked();
    await page.locator(`a[href="/console/integrations/github/deliveries/${did}"]`).click();
    await page.getByRole('heading', { name: `GitHub delivery ${did}` }).waitFor();
    const rows = page.locator('section[aria-labelledby="evaluated"] tbody tr');
    expect(await rows.filter({ hasText: 'on-issue' }).textContent()).toContain('Would trigger');
    expect(await rows.filter({ hasText: 'on-bug' }).textContent()).toContain('Would not trigger');
    await checked();
    await screenshot(page, 'provider-delivery');

    await page.locator(`a[href="/console/runs/${run!.id}"]`).click();
    await page.waitForURL(`**/console/runs/${run!.id}`);
    await page.locator(`a[href="/console/integrations/github/deliveries/${did}"]`).first().click();
    await page.waitForURL(`**/console/integrations/github/deliveries/${did}`);

    await page.getByRole('link', { name: 'Replay…' }).click();
    await page.getByRole('heading', { name: `Replay delivery ${did}?` }).waitFor();
    await checked();
    await page.getByRole('button', { name: 'Replay delivery' }).click();
    await page.getByText('This is a replay').waitFor();
    expect(page.url()).toMatch(/\/console\/integrations\/github\/deliveries\/dlv_[^?]+\?done=replay$/);
    expect(await page.locator(`a[href="/console/integrations/github/deliveries/${did}"]`).count()).toBe(1);
    await checked();
  });

  it("shows a refused revision's changes beside its errors", async () => {
    await server.api('PUT', '/secrets/alerts-token', { value: 'a-long-enough-token-value' });
    const f = await createGitFactory(server, {
      ...baseFiles(),
      'webhooks/alerts.yaml': webhookYaml('alerts-token'),
      'webhooks/old.yaml': webhookYaml('alerts-token'),
    });
    await f.sync();
    const revision = await f.commit(
      {
        'webhooks/alerts.yaml': 'authMode: token\nsecretName: alerts-token\nenabeld: false\n',
        'runners/big.yaml': RUNNER,
      },
      'refused',
      { remove: ['webhooks/old.yaml'] },
    );
    expect((await f.sync()).result).toBe('failed');
    await page.goto(`${server.url}/console/factories/${f.id}`);
    await page
      .locator(`a[href="/console/factories/${f.id}/revisions/${encodeURIComponent(revision)}"]`)
      .first()
      .click();
    await page.getByRole('heading', { name: 'Changes' }).waitFor();
    expect(await page.locator('#file-changes').textContent()).toContain('runners/big.yaml');
    expect(await page.locator('#refused-plan').textContent()).toMatch(/deleted: webhook old/);
    expect(await page.locator('.diagnostics').textContent()).toContain('webhooks/alerts.yaml:3');
    await checked();
    await screenshot(page, 'revision-refused');
  });

  it('found no serious or critical axe violation on any page', () => {
    expect(violations).toEqual([]);
  });
});
