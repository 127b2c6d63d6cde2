/**
 * The console in a real browser: Debian's Chromium driven by playwright-core, axe-core on every page, and
 * screenshots of the main pages at 1280 and 390 px, written to docs/screenshots/ only when
 * AGENTYARD_SCREENSHOTS=1 (test/console/browser-support.ts).
 */
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startExecServer, waitForState } from '../execution/support.ts';
import type { ExecServer } from '../execution/support.ts';
import { createGitRemote } from '../sources/git-fixture.ts';
import type { GitRemote } from '../sources/git-fixture.ts';
import { automationMd, baseFiles, webhookYaml } from '../support/factory-tree.ts';
import { launchChromium } from '../support/chromium.ts';
import { screenshot, seriousViolations } from './browser-support.ts';
const SECRET = 's3cr3t-token-from-the-sender';

describe('the console in Chromium', { timeout: 120_000 }, () => {
  let server: ExecServer;
  let browser: Browser;
  let remote: GitRemote;
  const violations: string[] = [];

  beforeAll(async () => {
    server = await startExecServer('pglite', { settings: { harnesses: ['command'], defaultHarness: 'command' } });
    browser = await launchChromium();
    remote = await createGitRemote();
  }, 120_000);

  afterAll(async () => {
    await browser?.close();
    remote?.close();
    await server?.close();
  });

  async function checked(page: Page): Promise<void> {
    violations.push(...(await seriousViolations(page)));
  }

  const shoot = screenshot;

  async function signIn(page: Page, key: string): Promise<void> {
    await page.goto(server.url);
    await checked(page);
    await page.getByLabel('API key').fill(key);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('heading', { name: 'Factories' }).waitFor();
  }

  it('signs in, registers a git factory, shows a refused revision at its line, and applies the fix', async () => {
    expect((await server.api('PUT', '/secrets/ci-webhook', { value: SECRET })).status).toBeLessThan(300);
    await remote.write({ ...baseFiles({ name: 'Browser demo' }), 'webhooks/ci.yaml': webhookYaml('ci-webhook') });
    await remote.commitAndPush('demo factory');

    const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    await signIn(page, server.adminKey);
    await page.getByText('Register a factory').click();
    await page.getByLabel('Name', { exact: true }).fill('demo');
    await page.getByLabel(/Git URL/).fill(`file://${remote.bare}`);
    await page.getByRole('button', { name: 'Register' }).click();
    await page.getByRole('heading', { name: /demo/ }).waitFor();
    await page.getByRole('button', { name: 'Sync now' }).click();
    await page.locator('h1 .badge', { hasText: /^\s*Ready\s*$/ }).waitFor({ timeout: 20_000 });
    await checked(page);

    await remote.write({ 'webhooks/ci.yaml': 'authMode: tokn\nsecretName: ci-webhook\n' });
    await remote.commitAndPush('typo');
    await page.getByRole('button', { name: 'Sync now' }).click();
    await page.locator('h1 .badge', { hasText: /^\s*Failed\s*$/ }).waitFor({ timeout: 20_000 });
    const link = page.locator('#problems ~ ul').getByRole('link', { name: 'webhooks/ci.yaml:1:11' });
    await link.waitFor();
    await shoot(page, 'factory-failed');
    await link.click();
    await page.waitForURL(/\/files\/webhooks\/ci\.yaml#L1$/);
    expect(await page.locator('li#L1').getAttribute('class')).toContain('flagged');
    await checked(page);

    await remote.write({ 'webhooks/ci.yaml': webhookYaml('ci-webhook') });
    await remote.commitAndPush('fix the typo');
    await page.goBack();
    await page.getByRole('button', { name: 'Sync now' }).click();
    await page.locator('h1 .badge', { hasText: /^\s*Ready\s*$/ }).waitFor({ timeout: 20_000 });
    await page.goto(server.url);
    await expect(page.getByRole('link', { name: 'demo' })).toBeDefined();
    await shoot(page, 'overview');
    await page.close();
  });

  it('shows deliveries as they arrive and tests a filter against a stored one', async () => {
    const factories = await server.api('GET', '/factories');
    const factory = factories.body.factories.find((f: { name: string }) => f.name === 'demo');
    const hooks = await server.api('GET', `/factories/${factory.id}/webhooks`);
    const hook = hooks.body.webhooks[0];
    await remote.write({
      'automations/on-failure/automation.md': automationMd(hook.uid, { payload: 'status: [failed]' }),
    });
    await remote.commitAndPush('run on failed builds');
    expect((await server.api('POST', `/factories/${factory.id}/sync`)).body.result).toBe('applied');

    const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    await signIn(page, server.adminKey);
    await page.getByRole('link', { name: 'demo' }).click();
    await page.getByRole('link', { name: 'ci', exact: true }).click();
    await page.getByRole('heading', { name: /Webhook ci/ }).waitFor();
    await checked(page);
    const rows = page.locator('#delivery-log tbody tr');
    expect(await rows.count()).toBe(0);
    for (const status of ['passed', 'failed', 'passed']) {
      const res = await fetch(hook.ingress_url, {
        method: 'POST',
        headers: { authorization: `Bearer ${SECRET}`, 'content-type': 'application/json' },
        body: JSON.stringify({ status, build: Math.random() }),
      });
      expect(res.status).toBe(202);
    }
    // console.js polls the log: the rows appear without a reload
    await rows.nth(2).waitFor({ timeout: 15_000 });
    expect(await rows.count()).toBe(3);
    await page.goto(server.url);
    expect(await page.locator('.tile', { hasText: 'deliveries in the last hour' }).textContent()).toMatch(/^\s*3\s/);
    await page.goBack();

    const passed = (await server.api('GET', `/webhooks/${hook.uid}/deliveries`)).body.deliveries[0];
    await page.getByLabel('Delivery ID').fill(passed.delivery_id);
    await page.getByRole('button', { name: 'Test filter' }).click();
    await page.getByText('Would not trigger').waitFor();
    await expect(page.getByText(/Payload check/)).toBeDefined();
    expect(await page.locator('.card[role=status]').textContent()).toMatch(/Webhook check[\s\S]*Payload check/);
    await checked(page);
    await page.close();
  });

  it('follows a run live and cancels it', async () => {
    const created = await server.api('POST', '/agent/runs', {
      prompt: 'SLEEP 60 then answer',
      config: { name: 'long' },
    });
    expect(created.status).toBeLessThan(300);
    const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    await signIn(page, server.adminKey);
    await page.goto(`${server.url}/console/runs`);
    await checked(page);
    await page.locator(`a[href="/console/runs/${created.body.run_id}"]`).click();
    await page.locator('#run-events').waitFor();
    // events arrive over SSE while the agent runs
    await page.locator('#run-events li').first().waitFor({ timeout: 20_000 });
    await page.locator('#run-events', { hasText: 'INPROGRESS' }).waitFor({ timeout: 20_000 });
    await checked(page);
    await page.getByRole('link', { name: 'Cancel run…' }).click();
    await page.getByRole('heading', { name: /^Cancel run/ }).waitFor();
    await checked(page);
    await page.getByRole('button', { name: 'Cancel run' }).click();
    await page.getByText(/Cancel requested/).waitFor();
    // the state changes on the page without a reload
    await page.locator('#run-state', { hasText: /^\s*CANCELLED\s*$/ }).waitFor({ timeout: 20_000 });
    await waitForState(server, created.body.run_id, ['CANCELLED']);
    await page.goto(`${server.url}/console/schedules`);
    await checked(page);
    await page.goto(`${server.url}/console/integrations`);
    await checked(page);
    await page.close();
  });

  it('shows a member its own team only and no admin forms', async () => {
    const team = await server.api('POST', '/teams', { name: 'elsewhere' });
    const otherKey = team.body.admin_key?.key ?? team.body.api_key?.key ?? team.body.key;
    const foreign = await server.api('POST', '/factories', { name: 'secret-project' }, otherKey);
    expect(foreign.status).toBe(201);
    const member = await server.api('POST', '/api-keys', { name: 'viewer', role: 'member' });
    const page = await browser.newPage({ viewport: { width: 390, height: 900 } });
    await signIn(page, member.body.key);
    expect(await page.textContent('main')).not.toContain('secret-project');
    expect(await page.getByText('Register a factory').count()).toBe(0);
    await page.goto(`${server.url}/console/factories/${foreign.body.id}`);
    await page.getByRole('heading', { name: 'Not found' }).waitFor();
    await page.close();
  });

  it('has no serious or critical accessibility violation on any page visited', () => {
    expect(violations).toEqual([]);
  });
});
