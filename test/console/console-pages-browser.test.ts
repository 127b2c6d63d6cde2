/**
 * Every console page and action added for following work and acting on it, in Debian's Chromium: the run page
 * live (each message once, tool output, artifacts, state and status without a reload), a plan that fits the
 * window, a delivery to its run and back, confirmations, settings forms, 404 pages and the session link;
 * axe-core on each, 0 serious or critical violations.
 */
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { liveWorkspace, startExecServer, waitForState, whenRunsTold } from '../execution/support.ts';
import { DELIVERIES_EVALUATED_TOPIC, RUN_LIFECYCLE_TOPIC } from '../../src/kernel/topics.ts';
import { whenTold } from '../support/signals.ts';

import type { ExecServer } from '../execution/support.ts';
import { launchChromium } from '../support/chromium.ts';
import { baseFiles } from '../support/factory-tree.ts';
import { overflowX, screenshot, seriousViolations, signInWithKey } from './browser-support.ts';

describe('console pages in Chromium', { timeout: 120_000 }, () => {
  let server: ExecServer;
  let browser: Browser;
  let page: Page;
  let factoryId: string;
  const violations: string[] = [];

  beforeAll(async () => {
    server = await startExecServer('pglite', { settings: { harnesses: ['command'], defaultHarness: 'command' } });
    browser = await launchChromium();
    const created = await server.api('POST', '/factories', { name: 'pages' });
    factoryId = created.body.id;
    const files = Object.entries(baseFiles()).map(([p, content]) => ({ path: p, content }));
    await server.api('POST', `/factories/${factoryId}/apply`, { files });
    page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    await signInWithKey(page, server.url, server.adminKey);
  }, 120_000);

  afterAll(async () => {
    await browser?.close();
    await server?.close();
  });

  const checked = async () => {
    violations.push(...(await seriousViolations(page)));
  };

  it('starts a run from the factory page and follows it live: each message once, output, artifacts, state', async () => {
    await page.goto(`${server.url}/console/factories/${factoryId}`);
    await checked();
    await page.getByLabel('Prompt', { exact: true }).fill('LIST_FILES LONG_OUTPUT ARTIFACTS_ALL UNTIL go-on');
    await page.getByRole('button', { name: 'Start run' }).click();
    await page.waitForURL(/\/console\/runs\/run_[a-z0-9]+\?done=started$/);
    const runId = /runs\/([^?]+)/.exec(page.url())![1]!;
    await page.getByText('Run started.').waitFor();
    expect(await page.locator(`a[href="/console/factories/${factoryId}"]`).count()).toBeGreaterThan(0);

    // the agent waits for a file in its workspace, which its status event names
    const workspace = await whenRunsTold(server, 'the workspace', async () => {
      const events = (await server.api('GET', `/agent/runs/${runId}/events?follow=false`)).text as string;
      return /working in ([^"\\]+)/.exec(events)?.[1];
    });
    await page.locator('#run-state', { hasText: /^\s*INPROGRESS\s*$/ }).waitFor({ timeout: 20_000 });
    expect(await page.locator('#run-events .ev-message').count()).toBe(0);
    // in its sandbox's own workspace
    writeFileSync(path.join(liveWorkspace(workspace), 'go-on'), '');

    await page.locator('#run-state', { hasText: /^\s*SUCCEEDED\s*$/ }).waitFor({ timeout: 20_000 });
    await page.locator('#live-status', { hasText: 'The run ended' }).waitFor();
    expect(await page.locator('#run-events .ev-message').count()).toBe(1);
    expect(await page.locator('#run-events .ev-tool .tool-slot').first().textContent()).toContain('completed');
    expect(await page.locator('#run-events .ev-tool pre.call').first().textContent()).toBe('ls -a');
    expect(await page.locator('#run-status').textContent()).not.toBe('—');
    expect(await page.locator('#run-usage').textContent()).toContain('10 input');
    // artifacts arrived without a reload: a plan as Markdown, a file, a screenshot, a pull request
    expect(await page.locator('#artifact-list .plan ol li').textContent()).toBe('Fix it');
    expect(await page.locator('#artifact-list .file a').getAttribute('href')).toMatch(/\/download$/);
    // the image's own load event
    const width = await page.locator('#artifact-list img').evaluate((el) => {
      const img = el as unknown as {
        complete: boolean;
        naturalWidth: number;
        addEventListener(type: 'load', listener: () => void): void;
      };
      return img.complete && img.naturalWidth > 0
        ? img.naturalWidth
        : new Promise<number>((resolve) => img.addEventListener('load', () => resolve(img.naturalWidth)));
    });
    expect(width).toBe(1);
    expect(await page.locator('#artifact-list .pr a').getAttribute('href')).toBe('https://example.com/pr/1');
    await checked();

    // the same page after a reload renders the same transcript
    const live = await page.locator('#run-events').innerHTML();
    await page.reload();
    expect(await page.locator('#run-events .ev-message').count()).toBe(1);
    expect(await page.locator('#run-events > li').count()).toBe((live.match(/<li class="ev /g) ?? []).length);
    await screenshot(page, 'run');

    // a long output is not in the page: opened by the keyboard, its block loads it in place of the link
    const block = page.locator('#run-events details.out', { hasText: 'Output (30 lines)' });
    expect(await block.locator('pre').count()).toBe(0);
    const href = await block.locator('a.more').getAttribute('href');
    expect(href).toMatch(new RegExp(`^/console/runs/${runId}/events/\\d+$`));
    await block.locator('summary').focus();
    await page.keyboard.press('Enter');
    await expect
      .poll(async () => block.locator('pre.out').textContent())
      .toMatch(/^line 1\n[\s\S]*<b>line 15<\/b>[\s\S]*line 30$/);
    expect(await block.locator('a.more').count()).toBe(0);
    await checked();
    // without the script, the link opens the event's own page
    await page.goto(`${server.url}${href}`);
    expect(await page.locator('main pre.out').count()).toBe(1);
    await checked();
    await page.goto(`${server.url}/console/runs/${runId}`);
    for (const width of [1280, 390]) {
      await page.setViewportSize({ width, height: 900 });
      expect(await overflowX(page)).toBeLessThanOrEqual(0);
    }
    await page.setViewportSize({ width: 1280, height: 900 });
  });

  it('follows a delivery to its run and back', async () => {
    await page.goto(`${server.url}/console/factories/${factoryId}`);
    await page.getByLabel('Name', { exact: true }).first().fill('ci');
    await page.getByRole('button', { name: 'Create webhook' }).click();
    const secret = (await page.locator('code.secret').textContent())!;
    await page.locator('#au-name').fill('on-failure');
    await page.locator('#au-filter').fill('{"status": ["failed"]}');
    await page.locator('#au-prompt').fill('Look at the failure.');
    await page.getByRole('button', { name: 'Create automation' }).click();
    await page.getByRole('link', { name: 'ci', exact: true }).click();
    const hook = (await server.api('GET', `/factories/${factoryId}/webhooks`)).body.webhooks[0];
    const sent = await fetch(hook.ingress_url, {
      method: 'POST',
      headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json' },
      body: '{"status":"failed"}',
    });
    const { delivery_id: deliveryId } = (await sent.json()) as { delivery_id: string };
    await fetch(hook.ingress_url, { method: 'POST', headers: { authorization: 'Bearer wrong' }, body: '{}' });
    const link = page.locator(`a[href$="/deliveries/${deliveryId}"]`);
    await link.waitFor({ timeout: 15_000 });
    await checked();
    await screenshot(page, 'webhook');
    const detail = await whenTold(
      server.server.ctx.bus,
      [DELIVERIES_EVALUATED_TOPIC, RUN_LIFECYCLE_TOPIC],
      async () => {
        const d = await server.api('GET', `/webhooks/${hook.uid}/deliveries/${deliveryId}`);
        return d.body.runs?.[0]?.run_id as string | undefined;
      },
      { what: 'the run of the delivery' },
    );
    await link.click();
    await page.getByRole('heading', { name: /Delivery/ }).waitFor();
    await page.getByText('Would trigger').waitFor();
    await checked();
    await screenshot(page, 'delivery');
    await page.locator(`a[href="/console/runs/${detail}"]`).click();
    await page.waitForURL(new RegExp(`/console/runs/${detail}$`));
    expect(await page.locator('#run-source').textContent()).toContain('WEBHOOK');
    await page.locator(`a[href$="/deliveries/${deliveryId}"]`).click();
    await page.getByRole('heading', { name: /Delivery/ }).waitFor();
    // the rejected one says why
    await page.goto(`${server.url}/console/webhooks/${hook.uid}`);
    await page.locator('#delivery-log tbody tr').nth(0).getByRole('link').click();
    await page.getByText('Why it was rejected').waitFor();
    await checked();
  });

  it('asks before changing: cancel, rotate, disable, revoke, delete', async () => {
    const run = await server.api('POST', '/agent/runs', { prompt: 'SLEEP 30', config: { name: 'long' } });
    await waitForState(server, run.body.run_id, ['INPROGRESS']);
    await page.goto(`${server.url}/console/runs/${run.body.run_id}`);
    await page.getByRole('link', { name: 'Cancel run…' }).click();
    await checked();
    await page.getByRole('link', { name: 'Keep it running' }).click();
    await page.getByRole('link', { name: 'Cancel run…' }).click();
    await page.getByRole('button', { name: 'Cancel run' }).click();
    await page.getByText('Cancel requested').waitFor();
    await page.reload(); // a GET: nothing is posted again
    await page.locator('#run-state', { hasText: /^\s*CANCELLED\s*$/ }).waitFor({ timeout: 20_000 });

    await page.goto(`${server.url}/console/factories/${factoryId}`);
    await page.getByRole('link', { name: 'Rotate secret…' }).click();
    await page.getByRole('heading', { name: /Rotate the secret of webhook ci\?/ }).waitFor();
    await checked();
    await page.getByRole('button', { name: 'Rotate secret' }).click();
    await page.getByText(/was rotated/).waitFor();
    await page.getByRole('link', { name: 'Disable…' }).click();
    await page.getByRole('button', { name: 'Disable webhook' }).click();
    await page.getByRole('button', { name: 'Enable' }).waitFor();
  });

  it('manages schedules, secrets, keys and integrations through their forms', async () => {
    await page.goto(`${server.url}/console/schedules`);
    await page.locator('#new-name').fill('nightly');
    await page.locator('#new-cron').fill('0 3 * * *');
    await page.locator('#new-prompt').fill('Tidy up');
    await page.getByRole('button', { name: 'Create schedule' }).click();
    await page.getByText('Schedule created.').waitFor();
    await checked();
    await page.getByText('Edit', { exact: true }).click();
    await page.getByRole('button', { name: 'Save schedule' }).click();
    await page.getByText('Schedule saved.').waitFor();
    await page.getByRole('link', { name: 'Delete…' }).click();
    await checked();
    await page.getByRole('button', { name: 'Delete schedule' }).click();
    await page.getByText('Schedule deleted.').waitFor();

    await page.goto(`${server.url}/console/secrets`);
    await page.locator('#sec-name').fill('linear-hook');
    await page.locator('#sec-value').fill('a-value-never-shown');
    await page.getByRole('button', { name: 'Set secret' }).click();
    await page.getByText('Secret set.').waitFor();
    expect(await page.content()).not.toContain('a-value-never-shown');
    await checked();

    await page.goto(`${server.url}/console/integrations`);
    await page.locator('#linear-webhook_secret_name').fill('linear-hook');
    await page.locator('form[action="/console/integrations/linear"] button').click();
    await page.getByText('Connection saved.').waitFor();
    await checked();
    await screenshot(page, 'integrations');
    await page.getByRole('link', { name: 'Disconnect…' }).click();
    await checked();
    await page.getByRole('button', { name: 'Disconnect' }).click();
    await page.getByText('Disconnected').waitFor();

    await page.goto(`${server.url}/console/api-keys`);
    await page.locator('#key-name').fill('ci');
    await page.getByRole('button', { name: 'Create key' }).click();
    const key = (await page.locator('code.secret').textContent())!;
    expect((await server.api('GET', '/whoami', undefined, key)).status).toBe(200);
    await checked();
    await page.getByRole('row', { name: /^ci / }).getByRole('link', { name: 'Revoke…' }).click();
    await checked();
    await page.getByRole('button', { name: 'Revoke key' }).click();
    await page.getByText('Key revoked').waitFor();
    expect((await server.api('GET', '/whoami', undefined, key)).status).toBe(401);
  });

  it('lists runs sorted by the column it says, and answers unknown pages with HTML', async () => {
    await page.goto(`${server.url}/console/runs`);
    await checked();
    await screenshot(page, 'runs');
    await page.locator('#run-list thead a', { hasText: /^Run/ }).click();
    expect(await page.locator('th[aria-sort="descending"]').textContent()).toContain('Run');
    await page.goto(`${server.url}/`);
    await checked();
    const missing = await page.goto(`${server.url}/console/no-such-page`);
    expect(missing?.status()).toBe(404);
    await page.getByRole('heading', { name: 'Not found' }).waitFor();
    await checked();
    const run = (await server.api('GET', '/agent/runs?limit=1')).body.runs[0];
    const anonymous = await browser.newPage();
    const res = await anonymous.goto(`${server.url}/console/whatever`);
    expect(res?.status()).toBe(404);
    violations.push(...(await seriousViolations(anonymous)));
    await anonymous.goto(run.session_link);
    await anonymous.getByRole('heading', { name: run.title }).waitFor();
    expect(await anonymous.locator('meta[http-equiv="refresh"]').count()).toBe(0);
    violations.push(...(await seriousViolations(anonymous)));
    const icon = await anonymous.goto(`${server.url}/favicon.ico`);
    expect(icon?.status()).toBe(200);
    await anonymous.close();
  });

  it('has no serious or critical accessibility violation on any page visited', () => {
    expect(violations).toEqual([]);
  });
});
