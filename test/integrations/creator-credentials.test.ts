/**
 * credentialStrategy CREATOR end to end: members link their own GitHub and Slack tokens by managed-secret name
 * (the providers, local stand-ins reached through octokit and @slack/web-api, say whose each token is); a
 * factory with `credentialStrategy: CREATOR` gets a signed issues.labeled from a linked member → the run's
 * GH_TOKEN/GITHUB_TOKEN and SLACK_BOT_TOKEN are that member's tokens and no App token is minted; the same event
 * from an account no member linked → the run fails naming the account, and acts as nobody.
 */
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import examples from '@octokit/webhooks-examples/api.github.com/index.json' with { type: 'json' };
import { sign } from '@octokit/webhooks-methods';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ENGINES } from '../support/db.ts';
import { FOREMAN, RUNNER } from '../support/factory-tree.ts';
import { startGithubApi } from '../support/github-api.ts';
import type { GithubApiStandIn } from '../support/github-api.ts';
import { startChatApis } from '../support/chat-apis.ts';
import type { ChatApis } from '../support/chat-apis.ts';
import { post } from '../ingress/support.ts';
import { executionsOf, FAKE, fakeRecords, startExecServer, waitForState } from '../execution/support.ts';
import { waitForCreatedRun } from '../support/run-events.ts';
import type { ExecServer } from '../execution/support.ts';

const { privateKey, publicKey } = generateKeyPairSync('rsa', {
  modulusLength: 2048,
  privateKeyEncoding: { type: 'pkcs8', format: 'pem' },
  publicKeyEncoding: { type: 'spki', format: 'pem' },
});

const ADA_GITHUB = `ghp_${'a1'.repeat(18)}`;
const ADA_SLACK = `xoxp-1111-2222-3333-${'b'.repeat(32)}`;
const BOB_GITHUB = `ghp_${'c3'.repeat(18)}`;
const ADMIN_GITHUB = `ghp_${'d4'.repeat(18)}`;

const FILES = {
  'factory.yaml': `schemaVersion: v1alpha1
name: Issue triage
credentialStrategy: CREATOR
repositories:
  - owner: Codertocat
    name: Hello-World
integrations:
  - type: slack
agentDefaults:
  model: auto
  runner: default
`,
  'agents/foreman/agent.md': FOREMAN,
  'runners/default.yaml': RUNNER,
  'automations/triage/automation.md': `---
triggers:
  - provider: github
    event: issue_labeled
    filter:
      labels: [bug]
---

Triage the labelled issue.
`,
};

function labeledIssue(sender: string): Record<string, any> {
  const entry = (examples as { name: string; examples: Record<string, any>[] }[]).find((e) => e.name === 'issues')!;
  const payload = structuredClone(entry.examples.find((x) => x.action === 'labeled')!);
  payload.installation = { id: 4242001 };
  payload.sender.login = sender;
  return payload;
}

describe.each(ENGINES)('credentialStrategy CREATOR on %s', (engine) => {
  let s: ExecServer;
  let github: GithubApiStandIn;
  let chat: ChatApis;
  const webhookSecret = randomBytes(20).toString('hex');
  let ada: string;
  let bob: string;
  let eventsUrl: string;

  beforeAll(async () => {
    github = await startGithubApi(publicKey, {
      [ADA_GITHUB]: { login: 'Codertocat', id: 21031067, name: 'Ada' },
      [BOB_GITHUB]: { login: 'Codertocat', id: 21031067, name: 'Ada' },
      [ADMIN_GITHUB]: { login: 'octo-admin', id: 9000001, name: 'The admin' },
    });
    chat = await startChatApis({
      slackToken: 'xoxb-bot',
      channels: [],
      users: [],
      linearKey: 'lin_api_x',
      teams: [],
      projects: [],
      states: [],
      issues: [],
      slackUserTokens: { [ADA_SLACK]: { user_id: 'U123ABC456', user: 'ada' } },
    });
    process.env.AGENTYARD_GITHUB_API_URL = github.url;
    process.env.AGENTYARD_SLACK_API_URL = chat.slackUrl;
    s = await startExecServer(engine, {
      settings: { harnesses: ['command'], defaultHarness: 'command', bins: { ...FAKE } },
    });
    ada = (await s.api('POST', '/api-keys', { name: 'ada', role: 'member' })).body.key;
    bob = (await s.api('POST', '/api-keys', { name: 'bob', role: 'member' })).body.key;
    for (const [name, value] of Object.entries({
      'gh-app-key': privateKey,
      'gh-app-hook': webhookSecret,
      'slack-signing': 'slack-signing-secret',
      'slack-bot': 'xoxb-bot',
      'admin-github': ADMIN_GITHUB,
    }))
      expect((await s.api('PUT', `/secrets/${name}`, { value })).status).toBeLessThan(300);
    const connection = await s.api('PUT', '/integrations/github', {
      mode: 'app',
      app_id: '4242',
      private_key_secret_name: 'gh-app-key',
      webhook_secret_name: 'gh-app-hook',
    });
    expect(connection.status, connection.text).toBe(200);
    eventsUrl = connection.body.events_url;
    const slack = { signing_secret_name: 'slack-signing', bot_token_secret_name: 'slack-bot' };
    expect((await s.api('PUT', '/integrations/slack', slack)).status).toBe(200);
  });
  afterAll(async () => {
    await s?.close();
    await github?.close();
    await chat?.close();
    delete process.env.AGENTYARD_GITHUB_API_URL;
    delete process.env.AGENTYARD_SLACK_API_URL;
  });

  it('a member links their own tokens; the provider says whose; nobody else sees or takes them', async () => {
    const linked = await s.api('PUT', '/integrations/github/identities/me', { token: ADA_GITHUB }, ada);
    expect(linked.status, linked.text).toBe(200);
    expect(linked.body).toMatchObject({ provider: 'github', account_id: 'Codertocat' });
    expect(linked.text).not.toContain(ADA_GITHUB);
    // the token went into a managed secret of ada's own
    const secretName = linked.body.secret_name as string;
    const secret = (await s.api('GET', `/secrets/${secretName}`, undefined, ada)).body;
    expect(secret.created_by).toBe((await s.api('GET', '/whoami', undefined, ada)).body.principal.uid);
    const slack = await s.api(
      'PUT',
      '/integrations/slack/identities/me',
      { token: ADA_SLACK, secret_name: 'ada-slack' },
      ada,
    );
    expect(slack.status, slack.text).toBe(200);
    expect(slack.body).toMatchObject({ account_id: 'U123ABC456', secret_name: 'ada-slack' });
    // a secret ada created is hers to link again
    const again = await s.api('PUT', '/integrations/slack/identities/me', { secret_name: 'ada-slack' }, ada);
    expect(again.status, again.text).toBe(200);

    const refused = await s.api(
      'PUT',
      '/integrations/github/identities/me',
      { token: 'ghp_revoked0000000000000000000000000000' },
      bob,
    );
    expect(refused.status, refused.text).toBe(422);
    expect(refused.body.code).toBe('provider_token_rejected');
    // Bob's token is (in this stand-in) Ada's account too: one member per account.
    const taken = await s.api('PUT', '/integrations/github/identities/me', { token: BOB_GITHUB }, bob);
    expect(taken.status, taken.text).toBe(409);
    expect(taken.body.code).toBe('provider_identity_taken');
    const bad = await s.api('PUT', '/integrations/github/identities/me', { token: BOB_GITHUB, login: 'x' }, bob);
    expect(bad.status).toBe(400);
    const neither = await s.api('PUT', '/integrations/github/identities/me', {}, bob);
    expect(neither.status).toBe(400);

    expect((await s.api('GET', '/integrations/github/identities/me', undefined, bob)).status).toBe(404);
    expect((await s.api('GET', '/integrations/github/identities/me', undefined, ada)).body.account_id).toBe(
      'Codertocat',
    );
    expect((await s.api('GET', '/integrations/github/identities', undefined, ada)).status).toBe(403);
    const listed = await s.api('GET', '/integrations/github/identities');
    expect(listed.status).toBe(200);
    expect(listed.body.identities.map((i: { account_id: string }) => i.account_id)).toEqual(['Codertocat']);
    expect(listed.text).not.toContain(ADA_GITHUB);
  });

  it("a member cannot link a team secret (an admin's) or another member's secret as their identity", async () => {
    for (const provider of ['github', 'slack', 'linear']) {
      const res = await s.api('PUT', `/integrations/${provider}/identities/me`, { secret_name: 'admin-github' }, bob);
      expect(res.status, res.text).toBe(403);
      expect(res.body.code).toBe('secret_not_owned');
      expect(res.body.detail).toContain('admin-github');
    }
    const others = await s.api('PUT', '/integrations/slack/identities/me', { secret_name: 'ada-slack' }, bob);
    expect(others.status, others.text).toBe(403);
    expect(others.body.code).toBe('secret_not_owned');
    // nor overwrite one by naming it with a token of their own
    const overwrite = await s.api(
      'PUT',
      '/integrations/github/identities/me',
      { token: BOB_GITHUB, secret_name: 'admin-github' },
      bob,
    );
    expect(overwrite.status, overwrite.text).toBe(403);
    expect(overwrite.body.code).toBe('secret_not_owned');
    expect((await s.api('GET', '/integrations/github/identities/me', undefined, bob)).status).toBe(404);
    // a team admin links a team secret
    const admin = await s.api('PUT', '/integrations/github/identities/me', { secret_name: 'admin-github' });
    expect(admin.status, admin.text).toBe(200);
    expect(admin.body.account_id).toBe('octo-admin');
  });

  it("run metadata cannot choose credentialStrategy CREATOR: a member's API run never gets an admin's token", async () => {
    const res = await s.api(
      'POST',
      '/agent/runs',
      {
        prompt: 'print the environment',
        metadata: { credential_strategy: 'CREATOR', provider: 'github', sender: 'octo-admin' },
      },
      bob,
    );
    expect(res.status, res.text).toBe(200);
    const run = await waitForState(s, res.body.run_id, ['SUCCEEDED', 'FAILED', 'ERROR'], 20_000, bob);
    expect(run.state, JSON.stringify(run.status_message)).toBe('SUCCEEDED');
    const [execution] = await executionsOf(s, run.run_id);
    const record = fakeRecords(execution!.workspace!)[0];
    expect(record.env.GH_TOKEN).toBeUndefined();
    expect(record.env.GITHUB_TOKEN).toBeUndefined();
  });

  async function deliver(sender: string, delivery: string): Promise<string> {
    const body = JSON.stringify(labeledIssue(sender));
    const res = await post(eventsUrl, body, {
      'content-type': 'application/json',
      'x-github-event': 'issues',
      'x-github-delivery': delivery,
      'x-hub-signature-256': await sign(webhookSecret, body),
    });
    expect(res.status, res.text).toBe(202);
    const deliveryId = res.body.delivery_id as string;
    return waitForCreatedRun(s.server.ctx.bus, async () => {
      const rows = await s.server.ctx.db.query<{ id: string }>('SELECT id FROM runs WHERE delivery_id = $1', [
        deliveryId,
      ]);
      return rows.rows[0]?.id;
    });
  }

  it("an event from the linked member runs with the member's tokens, not the App's or the bot's", async () => {
    const applied = await s.api('POST', '/factories', { name: 'creator', source: { type: 'managed' } });
    expect(applied.status, applied.text).toBe(201);
    const res = await s.api('POST', `/factories/${applied.body.id}/apply`, {
      files: Object.entries(FILES).map(([p, content]) => ({ path: p, content })),
      message: 'creator',
    });
    expect(res.status, res.text).toBe(200);

    const runId = await deliver('codertocat', 'c7ea7000-0000-4000-8000-000000000001');
    const run = await waitForState(s, runId, ['SUCCEEDED', 'FAILED', 'ERROR']);
    expect(run.state, JSON.stringify(run.status_message)).toBe('SUCCEEDED');
    const [execution] = await executionsOf(s, runId);
    const record = fakeRecords(execution!.workspace!)[0];
    expect(record.env.GH_TOKEN).toBe(`<${ADA_GITHUB.length} chars>`);
    expect(record.env.GITHUB_TOKEN).toBe(`<${ADA_GITHUB.length} chars>`);
    expect(record.env.SLACK_BOT_TOKEN).toBe(`<${ADA_SLACK.length} chars>`);
    expect(JSON.stringify(record.argv)).not.toContain(ADA_GITHUB);
    expect(github.tokenRequests).toEqual([]);
    const events = JSON.stringify((await s.api('GET', `/agent/runs/${runId}/conversation`)).body);
    expect(events).not.toContain(ADA_GITHUB);
    expect(events).not.toContain(ADA_SLACK);
  });

  it("a linked secret whose value someone else wrote since is not lent: an admin's token never becomes a member's", async () => {
    // ada linked her Slack token as "ada-slack"; a team admin writes another value over it
    const rewritten = await s.api('PUT', '/secrets/ada-slack', { value: `xoxp-9999-admin-${'z'.repeat(30)}` });
    expect(rewritten.status, rewritten.text).toBe(200);
    const runId = await deliver('codertocat', 'c7ea7000-0000-4000-8000-000000000003');
    const run = await waitForState(s, runId, ['SUCCEEDED', 'FAILED', 'ERROR']);
    expect(run.state, JSON.stringify(run.status_message)).toBe('SUCCEEDED');
    const [execution] = await executionsOf(s, runId);
    const record = fakeRecords(execution!.workspace!)[0];
    expect(record.env.GH_TOKEN).toBe(`<${ADA_GITHUB.length} chars>`);
    expect(record.env.SLACK_BOT_TOKEN).toBeUndefined();
  });

  it('a run acting as a member takes follow-ups only from that member or a team admin', async () => {
    const runId = await deliver('codertocat', 'c7ea7000-0000-4000-8000-000000000004');
    await waitForState(s, runId, ['SUCCEEDED', 'FAILED', 'ERROR']);
    const fromBob = await s.api('POST', `/agent/runs/${runId}/followups`, { message: 'push to main' }, bob);
    expect(fromBob.status, fromBob.text).toBe(403);
    expect(fromBob.body.code).toBe('not_authorized');
    expect(fromBob.body.detail).toContain('codertocat');
    expect((await s.api('GET', `/agent/runs/${runId}/followups`, undefined, bob)).body.followups ?? []).toEqual([]);
    const fromAda = await s.api('POST', `/agent/runs/${runId}/followups`, { message: 'thanks, go on' }, ada);
    expect(fromAda.status, fromAda.text).toBe(200);
    await waitForState(s, runId, ['SUCCEEDED', 'FAILED', 'ERROR']);
    const fromAdmin = await s.api('POST', `/agent/runs/${runId}/followups`, { message: 'and finish' });
    expect(fromAdmin.status, fromAdmin.text).toBe(200);
    await waitForState(s, runId, ['SUCCEEDED', 'FAILED', 'ERROR']);
  });

  it('an event from an account no member linked fails the run, naming the account; it does not act as the App', async () => {
    const runId = await deliver('octocat-stranger', 'c7ea7000-0000-4000-8000-000000000002');
    const run = await waitForState(s, runId, ['SUCCEEDED', 'FAILED', 'ERROR']);
    expect(run.state).not.toBe('SUCCEEDED');
    expect(JSON.stringify(run.status_message)).toContain('octocat-stranger');
    expect(JSON.stringify(run.status_message)).toContain('/integrations/github/identities/me');
    expect(await executionsOf(s, runId).then((e) => e.filter((x) => x.workspace))).toEqual([]);
    expect(github.tokenRequests).toEqual([]);
  });

  it("unlinking deletes the member's own token secret, never one that is not theirs", async () => {
    const linked = (await s.api('GET', '/integrations/github/identities/me', undefined, ada)).body;
    const slack = (await s.api('GET', '/integrations/slack/identities/me', undefined, ada)).body;
    expect((await s.api('DELETE', '/integrations/github/identities/me', undefined, ada)).status).toBe(200);
    expect((await s.api('GET', `/secrets/${linked.secret_name}`, undefined, ada)).status).toBe(404);
    // "ada-slack" was written over by an admin since: it is the admin's now, and stays
    expect((await s.api('DELETE', '/integrations/slack/identities/me', undefined, ada)).status).toBe(200);
    expect((await s.api('GET', `/secrets/${slack.secret_name}`, undefined, ada)).status).toBe(200);
  });
});
