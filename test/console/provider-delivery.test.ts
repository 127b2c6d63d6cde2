/**
 * Provider-event deliveries get the pages webhook deliveries have: signed GitHub, Slack and Linear events over
 * real HTTP reach a factory's automations; each delivery's console page (linked from the connection's log)
 * says why it was rejected, tests every automation with a trigger of the provider against it (would trigger /
 * would not, with the failing filter key), lists the runs it started, whose pages link back; team admins
 * replay an accepted one (asked first, redirected, the replay starts its run again). The JSON API under it:
 * GET /integrations/{provider}/deliveries/{id}/automations and POST …/replay.
 */
import { createHmac } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ENGINES } from '../support/db.ts';
import type { TestServer } from '../support/server.ts';
import { FOREMAN, RUNNER, providerFactoryYaml } from '../support/factory-tree.ts';
import { post } from '../ingress/support.ts';
import { githubExample, startConnectedServer } from '../integrations/connections.ts';
import type { ConnectedServer, ProviderSecrets } from '../integrations/connections.ts';
import { linearCommentCreated, SLACK_APP_MENTION } from '../integrations/fixtures.ts';
import { runsOfDeliveries, waitEvaluated } from '../automations/support.ts';
import { get, postForm, signIn } from './support.ts';
import type { Session } from './support.ts';

type Payload = Record<string, any>;

const automation = (provider: string, event: string, filter = '') => `---
triggers:
  - provider: ${provider}
    event: ${event}
${filter ? `    filter:\n      ${filter}\n` : ''}---

Handle the ${provider} ${event}.
`;

const FILES: Record<string, string> = {
  'factory.yaml': providerFactoryYaml('Provider pages', ['slack', 'linear']),
  'agents/foreman/agent.md': FOREMAN,
  'runners/default.yaml': RUNNER,
  'automations/gh-opened/automation.md': automation('github', 'issue_created'),
  'automations/gh-bug/automation.md': automation('github', 'issue_labeled', 'labels: [bug]'),
  'automations/slack-deploy/automation.md': automation('slack', 'app_mention', 'keywords: [deploy]'),
  'automations/slack-elsewhere/automation.md': automation('slack', 'app_mention', 'channel_ids: [C999OTHER]'),
  'automations/linear-comment/automation.md': automation('linear', 'comment_created'),
};

/** The row of an automation in a delivery page's "Automations with a … trigger" table. */
function verdict(page: string, name: string): string {
  return new RegExp(`<tr><th scope="row"><a [^>]*><code>${name}</code>[\\s\\S]*?</tr>`).exec(page)?.[0] ?? '';
}

describe.each(ENGINES)('provider delivery pages (%s)', (engine) => {
  let connected: ConnectedServer;
  let server: TestServer;
  let admin: Session;
  let member: Session;
  let secrets: ProviderSecrets;
  let urls: Record<string, string>;
  let sequence = 0;

  beforeAll(async () => {
    connected = await startConnectedServer(engine);
    ({ server, secrets, urls } = connected);
    const factory = await server.api('POST', '/factories', { name: 'provider-pages' });
    const files = Object.entries(FILES).map(([path, content]) => ({ path, content }));
    const applied = await server.api('POST', `/factories/${factory.body.id}/apply`, { files });
    expect(applied.status, applied.text).toBeLessThan(300);
    admin = await signIn(server, server.adminKey);
    const key = await server.api('POST', '/api-keys', { name: 'viewer', role: 'member' });
    member = await signIn(server, key.body.key);
  }, 60_000);
  afterAll(async () => connected?.server.close());

  const github = (header: string, payload: Payload, secret?: string) =>
    connected.postGithub(header, payload, `c0ffee00-0000-4000-8000-${String(++sequence).padStart(12, '0')}`, secret);

  async function accepted(res: { status: number; text: string; body: any }): Promise<string> {
    expect(res.status, res.text).toBe(202);
    await waitEvaluated(server, [res.body.delivery_id]);
    return res.body.delivery_id as string;
  }

  function issue(action: string, labels: string[] = []): Payload {
    const payload = githubExample('issues', action);
    payload.repository.full_name = 'Codertocat/Hello-World';
    payload.issue.author_association = 'MEMBER';
    payload.issue.labels = labels.map((name, id) => ({ id, name }));
    if (payload.label) payload.label = { id: 0, name: labels[0] ?? 'none' };
    return payload;
  }

  it('follows a GitHub event from the log to its page, its run and back', async () => {
    const did = await accepted(await github('issues', issue('opened')));
    const [run] = await runsOfDeliveries(server, [did]);
    expect(run).toBeDefined();

    const log = await get(server, '/console/integrations/github/deliveries', admin.cookie);
    expect(log.text).toContain(`href="/console/integrations/github/deliveries/${did}"`);

    const page = await get(server, `/console/integrations/github/deliveries/${did}`, admin.cookie);
    expect(page.status).toBe(200);
    expect(page.text).toContain(`<code>issue_created</code>`);
    expect(page.text).toContain(`href="/console/runs/${run!.id}"`);
    expect(verdict(page.text, 'gh-opened')).toContain('Would trigger');
    const bug = verdict(page.text, 'gh-bug');
    expect(bug).toContain('Would not trigger');
    expect(bug).toContain('its triggers take `issue_labeled`; this delivery means `issue_created`');
    expect(page.text).toContain('Replay…');

    const runPage = await get(server, `/console/runs/${run!.id}`, admin.cookie);
    expect(runPage.text).toContain(`href="/console/integrations/github/deliveries/${did}"`);
  });

  it('names the filter key a labeled issue misses, and the policy that skips an outsider', async () => {
    const did = await accepted(await github('issues', issue('labeled', ['wontfix'])));
    expect(await runsOfDeliveries(server, [did])).toHaveLength(0);
    const api = await server.api('GET', `/integrations/github/deliveries/${did}/automations`);
    expect(api.status, api.text).toBe(200);
    expect(api.body.events).toEqual(['issue_labeled']);
    const bug = api.body.automations.find((a: Payload) => a.automation_name === 'gh-bug');
    expect(bug.result).toBe('Would not trigger');
    expect(bug.filter_check).toMatchObject({ passed: false, path: 'filter.labels', trigger_index: 0 });
    expect(bug.filter_check.detail).toContain('"wontfix"');
    const page = await get(server, `/console/integrations/github/deliveries/${did}`, admin.cookie);
    expect(verdict(page.text, 'gh-bug')).toContain('<code>filter.labels</code>');

    const outsider = issue('opened');
    outsider.issue.author_association = 'NONE';
    const skipped = await accepted(await github('issues', outsider));
    const skippedPage = await get(server, `/console/integrations/github/deliveries/${skipped}`, admin.cookie);
    expect(verdict(skippedPage.text, 'gh-opened')).toContain('may not trigger this factory');
    expect(skippedPage.text).toContain('skipped');
  });

  it('explains a rejected event: why, and nothing evaluated', async () => {
    const res = await github('issues', issue('opened'), 'not the secret');
    expect(res.status).toBe(401);
    const did = res.body.delivery_id as string;
    const page = await get(server, `/console/integrations/github/deliveries/${did}`, admin.cookie);
    expect(page.status).toBe(200);
    expect(page.text).toContain('Why it was rejected');
    expect(page.text).toContain('None: a rejected delivery starts nothing.');
    expect(page.text).not.toContain('Replay…');
    const api = await server.api('GET', `/integrations/github/deliveries/${did}/automations`);
    expect(api.status).toBe(400);
    expect(api.text).toContain('deliveryId');
  });

  it('Slack and Linear deliveries: the keyword that matches, the channel that does not, their runs', async () => {
    const body = JSON.stringify({ ...SLACK_APP_MENTION, event_id: `Ev${++sequence}` });
    const slack = await accepted(await post(urls.slack!, body, connected.slackHeaders(body)));
    const [slackRun] = await runsOfDeliveries(server, [slack]);
    const page = await get(server, `/console/integrations/slack/deliveries/${slack}`, admin.cookie);
    expect(verdict(page.text, 'slack-deploy')).toContain('Would trigger');
    const elsewhere = verdict(page.text, 'slack-elsewhere');
    expect(elsewhere).toContain('Would not trigger');
    expect(elsewhere).toContain('<code>filter.channel_ids</code>');
    expect(page.text).toContain(`href="/console/runs/${slackRun!.id}"`);
    const slackRunPage = await get(server, `/console/runs/${slackRun!.id}`, admin.cookie);
    expect(slackRunPage.text).toContain(`href="/console/integrations/slack/deliveries/${slack}"`);

    const comment = JSON.stringify({ ...linearCommentCreated('Please look.'), webhookTimestamp: Date.now() });
    const linear = await accepted(
      await post(urls.linear!, comment, {
        'content-type': 'application/json',
        'linear-delivery': `7f8e9d0c-1b2a-4c3d-9e8f-${String(++sequence).padStart(12, '0')}`,
        'linear-event': 'Comment',
        'linear-signature': createHmac('sha256', secrets.linear).update(comment).digest('hex'),
      }),
    );
    const [linearRun] = await runsOfDeliveries(server, [linear]);
    const linearPage = await get(server, `/console/integrations/linear/deliveries/${linear}`, admin.cookie);
    expect(verdict(linearPage.text, 'linear-comment')).toContain('Would trigger');
    expect(linearPage.text).toContain(`href="/console/runs/${linearRun!.id}"`);
    const log = await get(server, '/console/integrations/linear/deliveries', admin.cookie);
    expect(log.text).toContain(`href="/console/integrations/linear/deliveries/${linear}"`);
  });

  it('replays an accepted event for a team admin, asked first; a member may not', async () => {
    const did = await accepted(await github('issues', issue('opened')));
    const base = `/console/integrations/github/deliveries/${did}`;
    const ask = await get(server, `${base}/replay`, admin.cookie);
    expect(ask.text).toContain(`Replay delivery ${did}?`);
    const replayed = await postForm(server, `${base}/replay`, { csrf: admin.csrf }, admin.cookie);
    expect(replayed.status).toBe(303);
    const location = replayed.headers.get('location')!;
    const replayId = /deliveries\/([^?]+)\?done=replay$/.exec(location)![1]!;
    expect(replayId).not.toBe(did);
    await waitEvaluated(server, [replayId]);
    const [run] = await runsOfDeliveries(server, [replayId]);
    expect(run?.automation_id).toBeTruthy();
    const page = await get(server, location, admin.cookie);
    expect(page.text).toContain('This is a replay');
    expect(page.text).toContain(`href="${base}"`);
    expect(page.text).toContain(`href="/console/runs/${run!.id}"`);

    const memberPage = await get(server, base, member.cookie);
    expect(memberPage.status).toBe(200);
    expect(memberPage.text).not.toContain('Replay…');
    const refused = await postForm(server, `${base}/replay`, { csrf: member.csrf }, member.cookie);
    expect(refused.headers.get('location')).toBe(`${base}?failed=replay-denied`);
    expect((await server.api('POST', '/integrations/github/deliveries/dlv_nope/replay')).status).toBe(404);
  });

  it('answers 404 for an unknown delivery or provider, as HTML in the console', async () => {
    expect((await server.api('GET', '/integrations/github/deliveries/dlv_nope/automations')).status).toBe(404);
    expect((await server.api('GET', '/integrations/gitlab/deliveries/dlv_nope/automations')).status).toBe(404);
    const page = await get(server, '/console/integrations/github/deliveries/dlv_nope', admin.cookie);
    expect(page.status).toBe(404);
    expect(page.headers.get('content-type')).toContain('text/html');
    expect((await get(server, '/console/integrations/gitlab/deliveries/x', admin.cookie)).status).toBe(404);
    // hostile ids: a clear 4xx naming the field, never a 500
    for (const id of ['x'.repeat(65), '%00', '..%2F..%2Fetc', "dlv_'--"]) {
      const api = await server.api('GET', `/integrations/github/deliveries/${id}/automations`);
      expect(api.status, `${id}: ${api.text}`).toBeGreaterThanOrEqual(400);
      expect(api.status, `${id}: ${api.text}`).toBeLessThan(500);
      const replay = await server.api('POST', `/integrations/github/deliveries/${id}/replay`);
      expect(replay.status, `${id}: ${replay.text}`).toBeLessThan(500);
      expect((await get(server, `/console/integrations/github/deliveries/${id}`, admin.cookie)).status).toBeLessThan(
        500,
      );
    }
    expect((await server.api('GET', '/run-counts?state=%00')).status).toBe(400);
    expect((await server.api('GET', '/webhooks/%00/lockouts')).status).toBeLessThan(500);
  });
});
