/**
 * Following work through the console: a factory's start-run form, a webhook delivery to the runs it started and
 * back, confirmations that say what they do, and the HTML answers for unknown addresses.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startExecServer, waitForState } from '../execution/support.ts';
import { DELIVERIES_EVALUATED_TOPIC, RUN_LIFECYCLE_TOPIC } from '../../src/kernel/topics.ts';
import { whenTold } from '../support/signals.ts';

import type { ExecServer } from '../execution/support.ts';
import { baseFiles } from '../support/factory-tree.ts';
import { get, postForm, signIn } from './support.ts';
import type { Session } from './support.ts';

describe('console flows', { timeout: 60_000 }, () => {
  let server: ExecServer;
  let admin: Session;
  let factoryId: string;

  beforeAll(async () => {
    server = await startExecServer('pglite', { settings: { harnesses: ['command'], defaultHarness: 'command' } });
    admin = await signIn(server, server.adminKey);
    const created = await server.api('POST', '/factories', { name: 'flows' });
    factoryId = created.body.id;
    const files = Object.entries(baseFiles()).map(([path, content]) => ({ path, content }));
    expect((await server.api('POST', `/factories/${factoryId}/apply`, { files })).status).toBeLessThan(300);
  }, 60_000);
  afterAll(async () => server?.close());

  it("starts a run from the factory's form and opens its page, which links the factory", async () => {
    const page = await get(server, `/console/factories/${factoryId}`, admin.cookie);
    const form = /<form method="post" action="([^"]*\/runs)"[^>]*>[\s\S]*?<\/form>/.exec(page.text)!;
    expect(form[1]).toBe(`/console/factories/${factoryId}/runs`);
    expect(form[0]).toMatch(/<textarea[^>]+name="prompt"/);
    const empty = await postForm(server, form[1]!, { csrf: admin.csrf, prompt: ' ' }, admin.cookie);
    expect(empty.status).toBe(422);
    expect(empty.text).toContain('write a prompt');
    const started = await postForm(server, form[1]!, { csrf: admin.csrf, prompt: 'Tidy up' }, admin.cookie);
    expect(started.status).toBe(303);
    const location = started.headers.get('location')!;
    expect(location).toMatch(/^\/console\/runs\/run_[a-z0-9]+\?done=started$/);
    const runId = /runs\/([^?]+)/.exec(location)![1]!;
    const run = await get(server, location, admin.cookie);
    expect(run.text).toContain('Run started.');
    expect(run.text).toContain(`href="/console/factories/${factoryId}"`);
    expect(run.text).toMatch(/id="run-source">FACTORY/);
    await waitForState(server, runId, ['SUCCEEDED', 'FAILED']);
  });

  it('follows a delivery to the run it started and back, and explains a rejected one', async () => {
    const made = await postForm(
      server,
      `/console/factories/${factoryId}/webhooks`,
      { csrf: admin.csrf, name: 'alerts', auth_mode: 'token' },
      admin.cookie,
    );
    const secret = /<code class="secret">([^<]+)<\/code>/.exec(made.text)![1]!;
    const hook = (await server.api('GET', `/factories/${factoryId}/webhooks`)).body.webhooks[0];
    await postForm(
      server,
      `/console/factories/${factoryId}/automations`,
      { csrf: admin.csrf, name: 'on-failure', webhook: hook.uid, filter: '{"status": ["failed"]}', prompt: 'Look.' },
      admin.cookie,
    );
    await postForm(
      server,
      `/console/factories/${factoryId}/automations`,
      { csrf: admin.csrf, name: 'on-deploy', webhook: hook.uid, filter: '{"kind": ["deploy"]}', prompt: 'Check.' },
      admin.cookie,
    );
    const send = (auth: string) =>
      fetch(hook.ingress_url, {
        method: 'POST',
        headers: { authorization: `Bearer ${auth}`, 'content-type': 'application/json' },
        body: JSON.stringify({ status: 'failed', kind: 'build' }),
      });
    const accepted = (await (await send(secret)).json()) as { delivery_id: string };
    const refused = await send('wrong-secret');
    expect(refused.status).toBe(401);

    const detail = await whenTold(
      server.server.ctx.bus,
      [DELIVERIES_EVALUATED_TOPIC, RUN_LIFECYCLE_TOPIC],
      async () => {
        const d = await server.api('GET', `/webhooks/${hook.uid}/deliveries/${accepted.delivery_id}`);
        return d.body.runs?.length ? d.body : undefined;
      },
      { what: 'the delivery to start its run' },
    );
    const runId = detail.runs[0].run_id as string;

    const log = await get(server, `/console/webhooks/${hook.uid}`, admin.cookie);
    expect(log.text).toContain(`href="/console/webhooks/${hook.uid}/deliveries/${accepted.delivery_id}"`);
    const rejectedId = /data-delivery="([^"]+)"/.exec(log.text)![1]!;
    expect(rejectedId).not.toBe(accepted.delivery_id);

    const page = await get(server, `/console/webhooks/${hook.uid}/deliveries/${accepted.delivery_id}`, admin.cookie);
    expect(page.status).toBe(200);
    expect(page.text).toContain(`href="/console/runs/${runId}"`);
    expect(page.text).toMatch(/<code>on-failure<\/code><\/th><td><span class="badge ok">Would trigger/);
    expect(page.text).toMatch(
      /<code>on-deploy<\/code><\/th><td><span class="badge warn">Would not trigger[\s\S]*?<code>\/kind<\/code>/,
    );

    const rejected = await get(server, `/console/webhooks/${hook.uid}/deliveries/${rejectedId}`, admin.cookie);
    expect(rejected.status).toBe(200);
    expect(rejected.text).toContain('Why it was rejected');
    expect(rejected.text).toContain('a rejected delivery starts nothing');

    const run = await get(server, `/console/runs/${runId}`, admin.cookie);
    expect(run.text).toMatch(/id="run-source">WEBHOOK/);
    expect(run.text).toContain(`href="/console/webhooks/${hook.uid}/deliveries/${accepted.delivery_id}"`);
    expect(run.text).toContain(`href="/console/factories/${factoryId}"`);
    expect(run.text).toContain(`<a href="/console/webhooks/${hook.uid}">alerts</a>`);
    expect(run.text).toContain(`#automation-${detail.runs[0].automation_id}`);
    expect(run.text).toContain('on-failure');
    const runs = await get(server, '/console/runs?source=WEBHOOK', admin.cookie);
    expect(runs.text).toContain(`/console/runs/${runId}`);
    expect(runs.text).toMatch(/<td>WEBHOOK<\/td>/);

    // An older page of the log is not refreshed live.
    const older = await get(server, `/console/webhooks/${hook.uid}?cursor=x`, admin.cookie);
    expect(older.text).not.toContain('data-live-deliveries');
  });

  it('asks before rotating or disabling a webhook and words each right', async () => {
    const hook = (await server.api('GET', `/factories/${factoryId}/webhooks`)).body.webhooks[0];
    const factory = await get(server, `/console/factories/${factoryId}`, admin.cookie);
    expect(factory.text).toContain(`href="/console/webhooks/${hook.uid}/rotate">Rotate secret…`);
    expect(factory.text).toContain(`href="/console/webhooks/${hook.uid}/toggle">Disable…`);
    const ask = await get(server, `/console/webhooks/${hook.uid}/rotate`, admin.cookie);
    expect(ask.text).toContain('Rotate the secret of webhook alerts?');
    const rotated = await postForm(server, `/console/webhooks/${hook.uid}/rotate`, { csrf: admin.csrf }, admin.cookie);
    const notice = /<div class="notice" role="status">([\s\S]*?)<\/div>/.exec(rotated.text)![1]!;
    expect(notice).toContain('was rotated');
    expect(notice).not.toContain('created');
    expect((await get(server, `/console/webhooks/${hook.uid}/toggle`, admin.cookie)).text).toContain(
      'Disable webhook alerts?',
    );
  });

  it('answers HTML for unknown console addresses, serves a favicon, and keeps forms valid in Chromium', async () => {
    for (const path of ['/console/nothing-here', '/console/runs/x/y/z', '/console']) {
      const signedIn = await get(server, path, admin.cookie);
      expect(signedIn.status).toBe(404);
      expect(signedIn.headers.get('content-type')).toMatch(/text\/html/);
      expect(signedIn.text).toContain('<h1>Not found</h1>');
      expect((await get(server, path)).headers.get('content-type')).toMatch(/text\/html/);
    }
    const icon = await get(server, '/favicon.ico');
    expect(icon.status).toBe(200);
    expect(icon.headers.get('content-type')).toBe('image/svg+xml');
    const factory = await get(server, `/console/factories/${factoryId}`, admin.cookie);
    for (const [, pattern] of factory.text.matchAll(/pattern="([^"]+)"/g)) {
      // Chromium compiles `pattern` with the v flag
      expect(() => new RegExp(`^(?:${pattern})$`, 'v')).not.toThrow();
    }
    const noHook = await server.api('POST', '/factories', { name: 'no-hooks' });
    const files = Object.entries(baseFiles()).map(([path, content]) => ({ path, content }));
    await server.api('POST', `/factories/${noHook.body.id}/apply`, { files });
    const bare = await get(server, `/console/factories/${noHook.body.id}`, admin.cookie);
    expect(bare.text).toContain('create a webhook first');
    const posted = await postForm(
      server,
      `/console/factories/${noHook.body.id}/automations`,
      { csrf: admin.csrf, name: 'x', prompt: 'y' },
      admin.cookie,
    );
    expect(posted.status).toBe(422);
    expect(posted.text).toContain('choose the webhook');
  });
});

describe('lists that hold up', { timeout: 60_000 }, () => {
  let server: ExecServer;
  let admin: Session;

  beforeAll(async () => {
    server = await startExecServer('pglite', { settings: { harnesses: ['command'], defaultHarness: 'command' } });
    admin = await signIn(server, server.adminKey);
  }, 60_000);
  afterAll(async () => server?.close());

  it('sorts runs by the column, pages both ways, filters and searches', async () => {
    const ids: string[] = [];
    for (const title of ['charlie', 'alpha', 'bravo']) {
      const r = await server.api('POST', '/agent/runs', { title, prompt: `work on ${title} NEEDLE-${title}` });
      ids.push(r.body.run_id);
    }
    for (const id of ids) await waitForState(server, id, ['SUCCEEDED', 'FAILED']);
    const titles = (text: string) =>
      [...text.matchAll(/<th scope="row"><a href="\/console\/runs\/[^"]+">([^<]+)</g)].map((m) => m[1]);

    const byTitle = await get(server, '/console/runs?sort_by=title&sort_order=asc&limit=2', admin.cookie);
    expect(titles(byTitle.text)).toEqual(['alpha', 'bravo']);
    expect(byTitle.text).toMatch(/<th scope="col" aria-sort="ascending"><a [^>]*>Run ▲/);
    const next = /<a href="([^"]+)" rel="next">/.exec(byTitle.text)![1]!.replaceAll('&amp;', '&');
    const page2 = await get(server, next, admin.cookie);
    expect(titles(page2.text)).toEqual(['charlie']);
    const prev = /<a href="([^"]+)" rel="prev">/.exec(page2.text)![1]!.replaceAll('&amp;', '&');
    expect(titles((await get(server, prev, admin.cookie)).text)).toEqual(['alpha', 'bravo']);

    const newest = await get(server, '/console/runs', admin.cookie);
    expect(titles(newest.text)).toEqual(['bravo', 'alpha', 'charlie']);
    expect(newest.text).toMatch(/aria-sort="descending"><a [^>]*>Created ▼/);
    const searched = await get(server, '/console/runs?q=needle-alpha', admin.cookie);
    expect(titles(searched.text)).toEqual(['alpha']);
    const failed = await get(server, '/console/runs?state=FAILED', admin.cookie);
    expect(failed.text).toContain('No runs match.');
    const bad = await get(server, '/console/runs?creator=%00', admin.cookie);
    expect(bad.status).toBeLessThan(500);
  });

  it('counts active runs by state on the overview and serves the counts for live refresh', async () => {
    const r = await server.api('POST', '/agent/runs', { title: 'waiting', prompt: 'UNTIL released-file' });
    await waitForState(server, r.body.run_id, ['INPROGRESS']);
    const overview = await get(server, '/', admin.cookie);
    expect(overview.text).toMatch(/<a class="big" href="\/console\/runs\?state=INPROGRESS">1<\/a> inprogress/);
    expect(overview.text).toContain('data-live-html="/console/overview.html"');
    const live = await get(server, '/console/overview.html', admin.cookie);
    expect(live.text).toContain(`/console/runs/${r.body.run_id}`);
    await server.api('POST', `/agent/runs/${r.body.run_id}/cancel`);
  });
});
