/**
 * Provider events end to end on real HTTP: a team connects GitHub, Slack and Linear by secret name, a factory
 * from committed files subscribes to their events, and deliveries signed by each provider's documented scheme
 * (GitHub's own @octokit/webhooks-methods) start exactly the matching runs through the outbox.
 */
import { createHmac } from 'node:crypto';
import { LinearWebhookClient } from '@linear/sdk/webhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ENGINES } from '../support/db.ts';
import type { TestServer } from '../support/server.ts';
import { FOREMAN, RUNNER, providerFactoryYaml } from '../support/factory-tree.ts';
import { createGitFactory } from '../factories/support.ts';
import { post } from '../ingress/support.ts';
import { githubExample, startConnectedServer } from './connections.ts';
import type { ConnectedServer } from './connections.ts';
import { runsOfDeliveries, waitEvaluated } from '../automations/support.ts';
import { SLACK_APP_MENTION, LINEAR_AGENT_SESSION_CREATED } from './fixtures.ts';
import { DELIVERIES_EVALUATED_TOPIC } from '../../src/kernel/topics.ts';
import { whenTold } from '../support/signals.ts';

const FACTORY = providerFactoryYaml('Issue triage', ['slack', 'linear']);

const ISSUE_LABELED = `---
triggers:
  - provider: github
    event: issue_labeled
    filter:
      repos: [codertocat/hello-world]
      labels: [Bug]
---

Triage the labelled issue.
`;

const SLACK_MENTION = `---
triggers:
  - provider: slack
    event: app_mention
    filter:
      keywords: [deploy]
---

Answer the mention.
`;

const SOURCE_REVIEW = `---
triggers:
  - provider: github
    event: pull_request_opened
    filter:
      paths: ["src/**"]
---

Review the source change.
`;

const LINEAR_SESSION = `---
triggers:
  - provider: linear
    event: agent_session_created
---

Work on the Linear issue.
`;

describe.each(ENGINES)('provider events on %s', (engine) => {
  let connected: ConnectedServer;
  let server: TestServer;
  let githubSecret: string;
  let linearSecret: string;
  let urls: Record<string, string>;

  beforeAll(async () => {
    connected = await startConnectedServer(engine);
    ({ server, urls } = connected);
    ({ github: githubSecret, linear: linearSecret } = connected.secrets);
  });
  afterAll(async () => connected?.server.close());

  it('applies a factory whose automations have GitHub, Slack and Linear triggers, with no warning about them', async () => {
    const git = await createGitFactory(server, {
      'factory.yaml': FACTORY,
      'agents/foreman/agent.md': FOREMAN,
      'runners/default.yaml': RUNNER,
      'automations/triage/automation.md': ISSUE_LABELED,
      'automations/mention/automation.md': SLACK_MENTION,
      'automations/session/automation.md': LINEAR_SESSION,
      'automations/source-review/automation.md': SOURCE_REVIEW,
    });
    const synced = await git.sync();
    // The factory's own loop may have applied the tree already (then the sync answers `unchanged`).
    expect(synced.status.state, JSON.stringify(synced)).toBe('applied');
    expect(JSON.stringify(synced)).not.toContain('FF_NOT_SUPPORTED_HERE');
  });

  it('answers a connection by secret name, never a secret value, with its events URL', async () => {
    const res = await server.api('GET', '/integrations/github');
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ provider: 'github', mode: 'webhook', webhook_secret_name: 'gh-hook' });
    expect(res.body.events_url).toMatch(/\/integrations\/github\/events\/igc_[0-9a-z]+$/);
    expect(JSON.stringify(res.body)).not.toContain(githubSecret);
    const bad = await server.api('PUT', '/integrations/github', { mode: 'app', webhook_secret_name: 'gh-hook' });
    expect(bad.status).toBe(400);
    expect(bad.body.detail ?? bad.body.message ?? JSON.stringify(bad.body)).toContain('app_id');
    const missing = await server.api('PUT', '/integrations/slack', { signing_secret_name: 'no-such-secret' });
    expect(missing.status).toBe(404);
  });

  const deliverGithub = (payload: unknown, delivery: string, secret?: string) =>
    connected.postGithub('issues', payload, delivery, secret);

  it('a signed issues.labeled starts exactly one run; again → nothing; another label → nothing; bad signature → 401', async () => {
    const payload = githubExample('issues', 'labeled');
    const first = await deliverGithub(payload, 'c0ffee00-0000-4000-8000-000000000001');
    expect(first.status, first.text).toBe(202);
    const deliveryId = first.body.delivery_id as string;
    await waitEvaluated(server, [deliveryId]);
    const runs = await runsOfDeliveries(server, [deliveryId]);
    expect(runs).toHaveLength(1);
    const run = (await server.api('GET', `/agent/runs/${runs[0]!.id}`)).body;
    expect(run.source).toBe('GITHUB_ACTION');
    expect(run.prompt).toContain('Triage the labelled issue.');
    expect(run.prompt).toContain('- Event: issue_labeled');
    expect(run.prompt).toContain('- Repository: Codertocat/Hello-World');
    const listed = (await server.api('GET', '/agent/runs?source=GITHUB_ACTION')).body.runs as { run_id: string }[];
    expect(listed.map((r) => r.run_id)).toContain(runs[0]!.id);
    const attachment = await server.server.ctx.db.query<{ file_name: string }>(
      'SELECT file_name FROM run_attachments WHERE run_id = $1',
      [runs[0]!.id],
    );
    expect(attachment.rows.map((r) => r.file_name)).toEqual(['event-payload.json']);

    const again = await deliverGithub(payload, 'c0ffee00-0000-4000-8000-000000000001');
    expect(again.status).toBe(202);
    await waitEvaluated(server, [again.body.delivery_id]);
    expect(await runsOfDeliveries(server, [again.body.delivery_id])).toHaveLength(0);

    const other = githubExample('issues', 'labeled');
    other.label.name = 'enhancement';
    const otherRes = await deliverGithub(other, 'c0ffee00-0000-4000-8000-000000000002');
    expect(otherRes.status).toBe(202);
    await waitEvaluated(server, [otherRes.body.delivery_id]);
    expect(await runsOfDeliveries(server, [otherRes.body.delivery_id])).toHaveLength(0);

    const forged = await deliverGithub(payload, 'c0ffee00-0000-4000-8000-000000000003', 'not-the-secret');
    expect(forged.status).toBe(401);
    expect(await runsOfDeliveries(server, [forged.body.delivery_id])).toHaveLength(0);

    const log = (await server.api('GET', '/integrations/github/deliveries')).body.deliveries as { label: string }[];
    expect(log.map((d) => d.label).sort()).toEqual(['Accepted', 'Accepted', 'Duplicate', 'Rejected (auth)']);
    const connection = (await server.api('GET', '/integrations/github')).body;
    expect(connection.last_event).toBe('issue_labeled');
    expect(connection.last_error).toContain('rejected delivery');
  });

  const slackHeaders = (body: string, at?: number) => connected.slackHeaders(body, at);

  it('Slack: url_verification is answered, an app_mention starts a SLACK run once, retries and stale requests do not', async () => {
    const verification = JSON.stringify({ token: 'x', challenge: 'p2r5t8w', type: 'url_verification' });
    const handshake = await post(urls.slack!, verification, slackHeaders(verification));
    expect(handshake.status).toBe(200);
    expect(handshake.body).toEqual({ challenge: 'p2r5t8w' });

    const body = JSON.stringify(SLACK_APP_MENTION);
    const res = await post(urls.slack!, body, slackHeaders(body));
    expect(res.status, res.text).toBe(202);
    await waitEvaluated(server, [res.body.delivery_id]);
    const runs = await runsOfDeliveries(server, [res.body.delivery_id]);
    expect(runs).toHaveLength(1);
    expect((await server.api('GET', `/agent/runs/${runs[0]!.id}`)).body.source).toBe('SLACK');

    const retry = await post(urls.slack!, body, { ...slackHeaders(body), 'x-slack-retry-num': '1' });
    expect(retry.status).toBe(202);
    await waitEvaluated(server, [retry.body.delivery_id]);
    expect(await runsOfDeliveries(server, [retry.body.delivery_id])).toHaveLength(0);

    const stale = await post(urls.slack!, body, slackHeaders(body, Math.floor(Date.now() / 1000) - 600));
    expect(stale.status).toBe(401);
  });

  it('Linear: an agent session starts a LINEAR run; a stale webhookTimestamp is refused', async () => {
    const payload = { ...LINEAR_AGENT_SESSION_CREATED, webhookTimestamp: Date.now() };
    const body = JSON.stringify(payload);
    const signature = createHmac('sha256', linearSecret).update(body).digest('hex');
    // The signature is the one Linear's own SDK accepts.
    expect(new LinearWebhookClient(linearSecret).verify(Buffer.from(body), signature)).toBe(true);
    const headers = {
      'content-type': 'application/json',
      'linear-delivery': '7f8e9d0c-1b2a-4c3d-9e8f-000000000001',
      'linear-event': 'AgentSessionEvent',
      'linear-signature': signature,
    };
    const res = await post(urls.linear!, body, headers);
    expect(res.status, res.text).toBe(202);
    await waitEvaluated(server, [res.body.delivery_id]);
    const runs = await runsOfDeliveries(server, [res.body.delivery_id]);
    expect(runs).toHaveLength(1);
    expect((await server.api('GET', `/agent/runs/${runs[0]!.id}`)).body.source).toBe('LINEAR');

    const old = JSON.stringify({ ...LINEAR_AGENT_SESSION_CREATED, webhookTimestamp: Date.now() - 10 * 60_000 });
    const staleRes = await post(urls.linear!, old, {
      ...headers,
      'linear-delivery': '7f8e9d0c-1b2a-4c3d-9e8f-000000000002',
      'linear-signature': createHmac('sha256', linearSecret).update(old).digest('hex'),
    });
    expect(staleRes.status).toBe(401);
  });

  it('Linear (issue 28): a signed body without webhookTimestamp is refused, and so is its replay', async () => {
    const headers = (body: string, delivery: string) => ({
      'content-type': 'application/json',
      'linear-delivery': delivery,
      'linear-event': 'AgentSessionEvent',
      'linear-signature': createHmac('sha256', linearSecret).update(body).digest('hex'),
    });
    const bare = JSON.stringify(LINEAR_AGENT_SESSION_CREATED);
    expect(bare).not.toContain('webhookTimestamp');
    const missing = await post(urls.linear!, bare, headers(bare, '7f8e9d0c-1b2a-4c3d-9e8f-000000000010'));
    expect(missing.status, missing.text).toBe(401);
    expect(missing.body).toMatchObject({ code: 'webhook_unauthorized' });
    expect(missing.body.detail).toContain('webhookTimestamp is missing');
    // A captured delivery sent again later under a new delivery id: its signed time is past the 60 s window.
    const captured = JSON.stringify({ ...LINEAR_AGENT_SESSION_CREATED, webhookTimestamp: Date.now() - 61_000 });
    const replay = await post(urls.linear!, captured, headers(captured, '7f8e9d0c-1b2a-4c3d-9e8f-000000000011'));
    expect(replay.status, replay.text).toBe(401);
    expect(replay.body.code).toBe('webhook_unauthorized');
  });

  it('a deleted connection answers 404', async () => {
    const body = JSON.stringify({ type: 'Issue', action: 'create', data: {} });
    expect((await server.api('DELETE', '/integrations/linear')).status).toBe(200);
    const res = await post(urls.linear!, body, { 'content-type': 'application/json', 'linear-signature': '00' });
    expect(res.status).toBe(404);
    expect((await server.api('GET', '/integrations/linear')).status).toBe(404);
  });

  it("a plain-webhook connection cannot list a pull request's files: paths does not match, and it says why", async () => {
    const payload = githubExample('pull_request', 'opened');
    payload.repository.full_name = 'Codertocat/Hello-World';
    const res = await connected.postGithub('pull_request', payload, 'c0ffee00-0000-4000-8000-000000000010');
    expect(res.status, res.text).toBe(202);
    await waitEvaluated(server, [res.body.delivery_id]);
    expect(await runsOfDeliveries(server, [res.body.delivery_id])).toHaveLength(0);
    // Written just after the evaluation commits, before the evaluator tells the batch.
    const lastError = await whenTold(
      server.server.ctx.bus,
      [DELIVERIES_EVALUATED_TOPIC],
      async () => ((await server.api('GET', '/integrations/github')).body.last_error as string | null) ?? undefined,
      { what: "the connection's last error" },
    );
    expect(lastError).toContain(
      `delivery ${res.body.delivery_id}: paths filters on pull_request events need a GitHub App`,
    );
    expect((await server.api('GET', '/integrations/github')).body.last_event).toBe('pull_request_opened');
  });
});
